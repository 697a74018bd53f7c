import { startPlaneBed, type PlaneBed } from '../../test/support/plane';
import { Approvals } from './approvals';
import { viewOf } from './sessions';
import type { Turns } from './turn';

jest.setTimeout(60_000);

// Approvals on their own: a request the CLI reported, denied (recorded only) or approved (the tool
// allowed and the session re-run), answered once.
describe('Approvals', () => {
  let bed: PlaneBed;
  let turns: Turns;
  let approvals: Approvals;

  beforeAll(async () => {
    bed = await startPlaneBed();
    turns = bed.turns;
    approvals = new Approvals({ store: bed.store, places: bed.places, turns });
  });
  afterAll(() => bed?.teardown());

  const requested = async (requestId: string) => {
    const record = await bed.session();
    await bed.store.requestApprovals(record.id, '3c4d5e6f-0000-4000-8000-000000000001', [{ requestId, toolName: 'Bash', input: { command: 'ls -la' }, reason: 'needs approval' }]);
    return (await bed.store.get(record.id))!;
  };

  it('records a denial without running anything, and refuses a second answer', async () => {
    const record = await requested('req-deny');
    expect(await approvals.resolve(viewOf(record), 'req-deny', 'DENY')).toBe(true);
    expect(await bed.store.approvals(record.id)).toMatchObject([{ requestId: 'req-deny', status: 'denied' }]);
    expect(turns.list()).toEqual([]);
    await expect(approvals.resolve(viewOf(record), 'req-deny', 'APPROVE')).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(approvals.resolve(viewOf(record), 'req-none', 'DENY')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('re-runs the session with the approved command allowed', async () => {
    const record = await requested('req-approve');
    const command = jest.spyOn(bed.driver, 'command');
    try {
      expect(await approvals.resolve(viewOf(record), 'req-approve', 'APPROVE')).toBe(true);
      expect(command.mock.calls[0]?.[1]).toMatchObject({ allowTools: ['Bash(ls -la)'], text: expect.stringContaining('The user approved your Bash call') });
    } finally {
      command.mockRestore();
    }
    expect(await bed.store.approvals(record.id)).toMatchObject([{ requestId: 'req-approve', status: 'approved' }]);
    for (let i = 0; i < 400 && !(await bed.eventTypes(record.id)).includes('TURN_COMPLETE'); i++) await new Promise((r) => setTimeout(r, 25));
    expect(await bed.eventTypes(record.id)).toEqual(['SESSION_CREATED', 'APPROVAL_REQUEST', 'APPROVAL_RESOLVED', 'ASSISTANT_DELTA', 'TRANSCRIPT_APPENDED', 'TURN_COMPLETE']);
  });

  it('refuses to approve while a turn holds the session', async () => {
    const record = await requested('req-busy');
    const { record: held } = await bed.store.acquireTurn(record.id, '3c4d5e6f-0000-4000-8000-000000000009', 'another turn', 60_000);
    await expect(approvals.resolve(viewOf(held), 'req-busy', 'APPROVE')).rejects.toMatchObject({ code: 'TURN_IN_FLIGHT' });
    expect(await bed.store.approvals(record.id)).toMatchObject([{ requestId: 'req-busy', status: 'pending' }]);
  });
});
