import { WHEN_VALUE_CHARS } from '@keelson/schema';
import { approvalKeyOf, toNode, toRun, whenValue, type RunRecordRow } from './runRecords';

describe('runRecords', () => {
  it("names a pause's approval run:<pause id>", () => {
    expect(approvalKeyOf('p-1')).toBe('run:p-1');
  });

  it('whenValue: the trimmed output, cut to WHEN_VALUE_CHARS; nothing is the empty string', () => {
    expect(whenValue('  yes \n')).toBe('yes');
    expect(whenValue(` ${'x'.repeat(WHEN_VALUE_CHARS + 5)}`)).toBe('x'.repeat(WHEN_VALUE_CHARS));
    expect(whenValue(null)).toBe('');
    expect(whenValue(undefined)).toBe('');
  });

  it('maps a run row to its record, a missing caller as null', () => {
    const row = {
      id: 'r',
      workflow_name: 'w',
      definition: { name: 'w', nodes: [] },
      inputs: { a: '1' },
      status: 'RUNNING',
      launch: 2,
      cwd: '/c',
      artifacts_dir: '/c/r',
      checkout: null,
      project_id: 'p',
      rib_id: 'rib',
      started_by_rib_id: 'rib2',
      started_by: undefined,
      temporal_workflow_id: 't',
    } as unknown as RunRecordRow;
    expect(toRun(row)).toEqual({
      id: 'r',
      workflowName: 'w',
      definition: { name: 'w', nodes: [] },
      inputs: { a: '1' },
      status: 'RUNNING',
      launch: 2,
      cwd: '/c',
      artifactsDir: '/c/r',
      checkout: null,
      projectId: 'p',
      ribId: 'rib',
      startedByRibId: 'rib2',
      startedBy: null,
      temporalWorkflowId: 't',
    });
  });

  it('maps a node row to its record', () => {
    expect(toNode({ node_id: 'n', status: 'FAILED', launch: 1, attempt: 2, failures: 3, output: 'o', exit_code: 4, error: 'e' })).toEqual({
      nodeId: 'n',
      status: 'FAILED',
      launch: 1,
      attempt: 2,
      failures: 3,
      output: 'o',
      exitCode: 4,
      error: 'e',
    });
  });
});
