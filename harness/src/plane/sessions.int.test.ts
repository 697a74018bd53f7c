import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { startPlaneBed, type PlaneBed } from '../../test/support/plane';
import { Sessions, summaryOf } from './sessions';

jest.setTimeout(60_000);

// Sessions on their own: identity (aliases, the capability checked at the edge before NOT_FOUND),
// listing beside the native store, starting, adopting by cwd, and transcript pages.
describe('Sessions', () => {
  let bed: PlaneBed;
  let sessions: Sessions;

  beforeAll(async () => {
    bed = await startPlaneBed();
    sessions = new Sessions({ store: bed.store, drivers: bed.drivers, places: bed.places, log: bed.log });
  });
  afterAll(() => bed?.teardown());

  it('starts a session pinned in the project root and resolves it, by its id and by a superseded one', async () => {
    const record = await sessions.start('hermes', { projectId: bed.project.id, title: 'first' });
    expect(record).toMatchObject({ harnessId: 'hermes', projectId: bed.project.id, cwd: bed.project.rootPath, title: 'first', origin: 'started' });
    expect((await sessions.resolve(record.id))?.record?.id).toBe(record.id);
    const next = await bed.store.rotate(record, { id: 'hermes:20250701_100000_abcdef', nativeId: '20250701_100000_abcdef' });
    const view = await sessions.resolve(record.id);
    expect(view).toMatchObject({ id: next.id, nativeId: '20250701_100000_abcdef', native: null });
    expect(summaryOf(view!)).toMatchObject({ sessionId: next.id, cwd: bed.project.rootPath, title: 'first' });
  });

  it('refuses what the harness cannot do before looking the session up, and names what is missing', async () => {
    await expect(sessions.at('grok-build:0b9f6a4e-3c2d-4e1f-8a7b-6c5d4e3f2a1b', 'resume', 'sendUserTurn')).rejects.toMatchObject({ code: 'CAPABILITY_UNSUPPORTED', details: { harnessId: 'grok-build', capability: 'resume' } });
    await expect(sessions.at('hermes:20250701_100000_000000', 'resume', 'sendUserTurn')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(sessions.at('hermes:20250701_100000_000000', 'approvals', 'resolveApproval')).rejects.toMatchObject({ code: 'CAPABILITY_UNSUPPORTED' });
    await expect(sessions.at('not a session', 'resume', 'sendUserTurn')).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
  });

  it('lists what the native store holds beside the records, filtered by project, and adopts a native session by its cwd', async () => {
    const elsewhere = join(bed.dir, 'elsewhere');
    await mkdir(elsewhere);
    await bed.driver.seedNative('20250702_090000_0000aa', bed.project.rootPath);
    await bed.driver.seedNative('20250702_090000_0000bb', elsewhere);
    const all = (await sessions.list({ harnessId: 'hermes' })).map((v) => v.id);
    expect(all).toEqual(expect.arrayContaining(['hermes:20250702_090000_0000aa', 'hermes:20250702_090000_0000bb']));
    const inProject = (await sessions.list({ projectId: bed.project.id })).filter((v) => !v.record).map((v) => v.id);
    expect(inProject).toEqual(['hermes:20250702_090000_0000aa']);

    const view = (await sessions.resolve('hermes:20250702_090000_0000aa'))!;
    expect(view).toMatchObject({ record: null, native: { cwd: bed.project.rootPath } });
    const adopted = await sessions.ownForTurn(view);
    expect(adopted).toMatchObject({ origin: 'adopted', projectId: bed.project.id, cwd: bed.project.rootPath, title: 'outside the mesh' });

    const outside = (await sessions.resolve('hermes:20250702_090000_0000bb'))!;
    await expect(sessions.ownForTurn(outside)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(await bed.store.get(outside.id)).toBeNull();
    expect(await sessions.own(outside)).toMatchObject({ origin: 'adopted', projectId: null, cwd: elsewhere });
  });

  it('leaves out a native session whose id rotation retired, looking the native ids up in one statement', async () => {
    await bed.driver.seedNative('20250704_090000_0000d1', bed.project.rootPath);
    await bed.driver.seedNative('20250704_090000_0000d2', bed.project.rootPath);
    await bed.driver.seedNative('20250704_090000_0000d3', bed.project.rootPath);
    const adopted = await sessions.own((await sessions.resolve('hermes:20250704_090000_0000d1'))!);
    await bed.store.rotate(adopted, { id: 'hermes:20250704_090000_0000d4', nativeId: '20250704_090000_0000d4' });
    const query = jest.spyOn(bed.runtime.dataSource, 'query');
    try {
      const listed = (await sessions.list({ harnessId: 'hermes' })).map((v) => v.id);
      expect(listed).toEqual(expect.arrayContaining(['hermes:20250704_090000_0000d4', 'hermes:20250704_090000_0000d2', 'hermes:20250704_090000_0000d3']));
      expect(listed).not.toContain('hermes:20250704_090000_0000d1');
      const aliasLookups = query.mock.calls.filter(([sql]) => String(sql).includes('harness_session_aliases'));
      expect(aliasLookups).toHaveLength(1);
    } finally {
      query.mockRestore();
    }
  });

  it('pages a transcript with opaque cursors and refuses a forged one', async () => {
    await bed.driver.seedNative('20250703_090000_0000cc', bed.project.rootPath);
    const view = (await sessions.resolve('hermes:20250703_090000_0000cc'))!;
    const page = await sessions.transcript(view, 5, null);
    expect(page.entries.map((e) => e.entry.id)).toEqual(['e0']);
    expect(page.hasNextPage).toBe(false);
    expect((await sessions.transcript(view, 5, page.entries[0]!.cursor)).entries).toEqual([]);
    await expect(sessions.transcript(view, 5, Buffer.from('transcript:01').toString('base64url'))).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
    expect((await sessions.transcriptEntries(view.id, ['e0', 'e9'])).map((e) => e.id)).toEqual(['e0']);
  });
});
