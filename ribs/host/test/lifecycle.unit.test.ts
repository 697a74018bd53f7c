import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Rib, RibRunEvent } from '@keelson/ribs-contract';
import { rib, sleep, startHost } from './support/quietHost';

/** A rib that logs each lifecycle hook as `<id>.<hook>`. */
function traced(id: string, log: string[], extra: Partial<Rib> = {}): Rib {
  return rib(id, {
    registerTools: () => (log.push(`${id}.registerTools`), []),
    composeBundle: async () => (log.push(`${id}.composeBundle`), {}),
    contributeWorkflows: () => (log.push(`${id}.contributeWorkflows`), [{ definition: { name: 'shared-name', owner: id } }]),
    contributeDocs: () => (log.push(`${id}.contributeDocs`), []),
    contributePolicies: () => (log.push(`${id}.contributePolicies`), []),
    dispose: async () => {
      await sleep(5);
      log.push(`${id}.dispose`);
    },
    ...extra,
  });
}

describe('activation', () => {
  it('registers each rib in order: tools, then workflows, docs and policies; composers stay lazy', async () => {
    const log: string[] = [];
    await startHost([traced('one', log), traced('two', log)]);
    expect(log).toEqual([
      'one.registerTools',
      'one.contributeWorkflows',
      'one.contributeDocs',
      'one.contributePolicies',
      'two.registerTools',
      'two.contributeWorkflows',
      'two.contributeDocs',
      'two.contributePolicies',
    ]);
  });

  it('activates in KEELSON_RIBS order when it is set, and the earlier rib keeps a shared workflow name', async () => {
    const log: string[] = [];
    const { host, warnings } = await startHost([traced('one', log), traced('two', log)], { env: { KEELSON_RIBS: 'two,one' } });
    expect(host.ribIds).toEqual(['two', 'one']);
    expect(host.workflows()).toEqual([expect.objectContaining({ name: 'shared-name', ribId: 'two', definition: { name: 'shared-name', owner: 'two' } })]);
    expect(warnings).toContainEqual(expect.objectContaining({ rule: 'workflow-collision', ribId: 'one' }));
  });

  it('skips a workflow contribution without a name, with a warning', async () => {
    const { host, warnings } = await startHost([rib('demo', { contributeWorkflows: () => [{ definition: { nodes: [] } }] })]);
    expect(host.workflows()).toEqual([]);
    expect(warnings).toContainEqual(expect.objectContaining({ rule: 'workflow-shape' }));
  });

  it('warns once at boot about regions whose workflowArgs the heartbeat cannot supply', async () => {
    const surface = {
      id: 'main',
      title: 'Main',
      layout: {
        rows: [
          {
            columns: [
              { key: 'rib:demo:a', workflow: 'w', workflowArgs: { id: 'a' } },
              { key: 'rib:demo:b', workflow: 'w', workflowArgs: { id: 'b' }, serverRefresh: false },
              { key: 'rib:demo:c', workflow: 'w', cadenceMs: 60_000 },
            ],
          },
        ],
      },
    };
    const { host, warnings } = await startHost([rib('demo', { surfaces: [surface] })]);
    expect(warnings.filter((w) => w.rule === 'refresh-args').map((w) => w.message)).toEqual([expect.stringMatching(/: rib:demo:a$/)]);
    expect(host.surfaceRegions().map((r) => [r.region.key, r.dynamic])).toEqual([
      ['rib:demo:a', false],
      ['rib:demo:b', false],
      ['rib:demo:c', false],
    ]);
  });
});

describe('the context a rib receives', () => {
  it('always has getExec, and leaves absent ports\' seams off', async () => {
    const { host } = await startHost([rib('demo')], { credentials: undefined, projects: undefined });
    const ctx = host.context('demo')!;
    expect(typeof ctx.getExec().runText).toBe('function');
    for (const seam of ['getCredential', 'getProjects', 'createProject', 'runAgentTurn', 'startWorkflow', 'registerOp']) expect(ctx).not.toHaveProperty(seam);
    for (const seam of ['getSnapshotManager', 'getDataDir', 'callTool', 'getToolReachability', 'registerRegion', 'invalidateManifest']) expect(ctx).toHaveProperty(seam);
  });

  it('names the data dir <home>/rib-<id> without creating it', async () => {
    const { host, home } = await startHost([rib('demo')]);
    const dir = host.context('demo')!.getDataDir!();
    expect(dir).toBe(join(home, 'rib-demo'));
    expect(existsSync(dir)).toBe(false);
  });

  it('takes the run seams the runs issue plugs in, but never lets them replace a host seam', async () => {
    const startWorkflow = jest.fn(async () => ({ runId: 'r-1' }));
    const fakeManager = jest.fn();
    const { host } = await startHost([rib('demo')], { seams: (ribId) => ({ startWorkflow, getSnapshotManager: fakeManager, getSidecar: () => ribId }) as never });
    const ctx = host.context('demo')!;
    await expect(ctx.startWorkflow!('w')).resolves.toEqual({ runId: 'r-1' });
    expect(ctx.getSidecar!()).toBe('demo');
    ctx.getSnapshotManager!();
    expect(fakeManager).not.toHaveBeenCalled();
    expect(Object.isFrozen(ctx)).toBe(true);
  });
});

describe('run events', () => {
  const event = (runId: string, status: RibRunEvent['status']): RibRunEvent => ({ workflowName: 'w', runId, status, inputs: {}, startedAt: '2026-01-01T00:00:00Z' });

  it('are delivered serialized per run, a slow handler settling before the next starts', async () => {
    const log: string[] = [];
    const { host } = await startHost([
      rib('demo', {
        onRunEvent: async (e) => {
          log.push(`start ${e.status}`);
          await sleep(e.status === 'running' ? 20 : 1);
          log.push(`end ${e.status}`);
        },
      }),
    ]);
    await Promise.all([host.deliverRunEvent('demo', event('r1', 'running')), host.deliverRunEvent('demo', event('r1', 'succeeded'))]);
    expect(log).toEqual(['start running', 'end running', 'start succeeded', 'end succeeded']);
  });

  it('are fail-soft: a throwing hook is warned about and the next event still arrives', async () => {
    const seen: string[] = [];
    const { host, warnings } = await startHost([
      rib('demo', {
        onRunEvent: (e) => {
          seen.push(e.status);
          if (e.status === 'running') throw new Error('handler bug');
        },
      }),
    ]);
    await expect(host.deliverRunEvent('demo', event('r1', 'running'))).resolves.toBeUndefined();
    await host.deliverRunEvent('demo', event('r1', 'failed'));
    expect(seen).toEqual(['running', 'failed']);
    expect(warnings).toContainEqual(expect.objectContaining({ rule: 'run-event', message: expect.stringMatching(/handler bug/) }));
  });
});

describe('dispose', () => {
  it('awaits every rib\'s dispose, last activated first, once', async () => {
    const log: string[] = [];
    const { host } = await startHost([traced('one', log), traced('two', log)]);
    log.length = 0;
    await Promise.all([host.dispose(), host.dispose()]);
    expect(log).toEqual(['two.dispose', 'one.dispose']);
  });

  it('keeps going past a dispose that throws', async () => {
    const log: string[] = [];
    const { host, warnings } = await startHost([
      traced('one', log),
      rib('bad', {
        dispose: () => {
          throw new Error('socket stuck');
        },
      }),
    ]);
    log.length = 0;
    await host.dispose();
    expect(log).toEqual(['one.dispose']);
    expect(warnings).toContainEqual(expect.objectContaining({ rule: 'dispose', ribId: 'bad' }));
  });
});
