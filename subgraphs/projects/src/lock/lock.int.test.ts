import { randomUUID } from 'node:crypto';
import {
  expectData,
  startProjectsHarness,
  type Gql,
  type ProjectsHarness,
} from '../../test/support/projectsHarness';

// The integration project's `testTimeout` is not applied (jest-circus reads only the global one).
jest.setTimeout(60_000);

interface LockView {
  id: string;
  holder: string;
  purpose: string;
  acquiredAt: string;
  project: { id: string };
}

const LOCK_FIELDS = 'id holder purpose acquiredAt project { id }';
const ACQUIRE = `mutation ($projectId: ID!, $purpose: String!, $holder: String!) {
  acquireMutationLock(projectId: $projectId, purpose: $purpose, holder: $holder) { ${LOCK_FIELDS} }
}`;
const RELEASE = 'mutation ($id: ID!) { releaseMutationLock(id: $id) }';

let h: ProjectsHarness;

beforeAll(async () => {
  h = await startProjectsHarness();
});
afterAll(() => h?.close());

/** A fresh project per test, so each starts unlocked. */
async function createProject(name: string): Promise<string> {
  const res = await h.gql<{ createProject: { id: string } }>(
    'mutation ($input: CreateProjectInput!) { createProject(input: $input) { id } }',
    { input: { name } },
  );
  return expectData(res).createProject.id;
}

function acquireRaw(projectId: string, holder: string, purpose: string, gql: Gql = h.gql) {
  return gql<{ acquireMutationLock: LockView }>(ACQUIRE, { projectId, holder, purpose });
}

/** Acquires a lock that must be granted, asserting it appended exactly one MUTATION_LOCK_ACQUIRED event for it. */
async function acquire(projectId: string, holder: string, purpose: string, gql: Gql = h.gql): Promise<LockView> {
  const seq = await h.lastSeq();
  const lock = expectData(await acquireRaw(projectId, holder, purpose, gql)).acquireMutationLock;
  expect(lock).toMatchObject({ holder, purpose, project: { id: projectId } });
  expect(await h.eventsSince(seq)).toEqual([{ type: 'MUTATION_LOCK_ACQUIRED', payload: { projectId, lockId: lock.id } }]);
  return lock;
}

/** Releases a lock that must exist, asserting it appended exactly one MUTATION_LOCK_RELEASED event for it. */
async function release(projectId: string, lockId: string): Promise<void> {
  const seq = await h.lastSeq();
  expect(expectData(await h.gql<{ releaseMutationLock: boolean }>(RELEASE, { id: lockId })).releaseMutationLock).toBe(true);
  expect(await h.eventsSince(seq)).toEqual([{ type: 'MUTATION_LOCK_RELEASED', payload: { projectId, lockId } }]);
}

async function currentLock(projectId: string): Promise<Pick<LockView, 'id' | 'holder' | 'purpose'> | null> {
  const res = await h.gql<{ project: { mutationLock: LockView | null } }>(
    'query ($id: ID!) { project(id: $id) { mutationLock { id holder purpose } } }',
    { id: projectId },
  );
  return expectData(res).project.mutationLock;
}

describe('acquireMutationLock', () => {
  it('grants a free project and shows the holder on Project.mutationLock', async () => {
    const projectId = await createProject('free');
    const lock = await acquire(projectId, 'rib:reviewer', 'resolve-review');
    expect(await currentLock(projectId)).toEqual({ id: lock.id, holder: 'rib:reviewer', purpose: 'resolve-review' });
  });

  it('rejects a second holder with CONFLICT, naming the holder and purpose', async () => {
    const projectId = await createProject('contended');
    const held = await acquire(projectId, 'rib:reviewer', 'resolve-review');

    const error = await h.expectRejectedUnchanged(() => acquireRaw(projectId, 'rib:formatter', 'format'), 'CONFLICT');
    expect(error.extensions).toMatchObject({ status: 409, holder: 'rib:reviewer', purpose: 'resolve-review' });
    expect(error.message).toContain('rib:reviewer');
    expect(error.message).toContain('resolve-review');
    expect(await currentLock(projectId)).toMatchObject({ id: held.id, holder: 'rib:reviewer' });
  });

  it('grants the lock to a new holder once the first releases it', async () => {
    const projectId = await createProject('handed-over');
    const first = await acquire(projectId, 'rib:reviewer', 'resolve-review');
    await release(projectId, first.id);
    expect(await currentLock(projectId)).toBeNull();

    const second = await acquire(projectId, 'rib:formatter', 'format');
    expect(await currentLock(projectId)).toMatchObject({ id: second.id, holder: 'rib:formatter', purpose: 'format' });
  });

  it('grants a second holder when the mutation lock is disabled (KEELSON_DISABLE_MUTATION_LOCK)', async () => {
    const projectId = await createProject('bypassed');
    const first = await acquire(projectId, 'rib:reviewer', 'resolve-review');
    const bypass = await h.startVariant({ disableMutationLock: true });
    try {
      const second = await acquire(projectId, 'operator', 'emergency fix', bypass.gql);
      expect(second.id).not.toBe(first.id);
      // The first holder is still the one reported.
      expect(await currentLock(projectId)).toMatchObject({ id: first.id });
    } finally {
      await bypass.stop();
    }
  });

  it('grants exactly one of 10 concurrent acquirers; the other 9 get CONFLICT naming the winner', async () => {
    const projectId = await createProject('raced');
    const seq = await h.lastSeq();
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => acquireRaw(projectId, `holder-${i}`, `purpose-${i}`)),
    );
    const granted = results.filter((r) => r.data?.acquireMutationLock).map((r) => r.data!.acquireMutationLock);
    expect(granted).toHaveLength(1);
    const winner = granted[0]!;
    const rejected = results.filter((r) => !r.data?.acquireMutationLock);
    expect(rejected.map((r) => r.errors?.[0]?.extensions)).toEqual(
      Array.from({ length: 9 }, () => expect.objectContaining({ code: 'CONFLICT', holder: winner.holder, purpose: winner.purpose })),
    );
    expect(await h.eventsSince(seq)).toEqual([{ type: 'MUTATION_LOCK_ACQUIRED', payload: { projectId, lockId: winner.id } }]);
    expect(await currentLock(projectId)).toMatchObject({ id: winner.id, holder: winner.holder });
  });

  it('rejects an unknown project with NOT_FOUND', async () => {
    const error = await h.expectRejectedUnchanged(() => acquireRaw(randomUUID(), 'someone', 'something'), 'NOT_FOUND');
    expect(error.extensions?.status).toBe(404);
  });

  it.each([
    ['an empty holder', '', 'purpose'],
    ['a blank purpose', 'holder', '   '],
  ])('rejects %s with BAD_USER_INPUT', async (_label, holder, purpose) => {
    const projectId = await createProject(`labels-${holder ? 'purpose' : 'holder'}`);
    await h.expectRejectedUnchanged(() => acquireRaw(projectId, holder, purpose), 'BAD_USER_INPUT');
  });
});

describe('releaseMutationLock', () => {
  it.each([
    ['an unknown lock id', () => randomUUID()],
    ['an id that is not a uuid', () => 'not-a-lock'],
  ])('rejects %s with NOT_FOUND', async (_label, id) => {
    const error = await h.expectRejectedUnchanged(() => h.gql(RELEASE, { id: id() }), 'NOT_FOUND');
    expect(error.extensions?.status).toBe(404);
  });

  it('rejects releasing a lock twice with NOT_FOUND', async () => {
    const projectId = await createProject('released-twice');
    const lock = await acquire(projectId, 'rib:reviewer', 'resolve-review');
    await release(projectId, lock.id);
    await h.expectRejectedUnchanged(() => h.gql(RELEASE, { id: lock.id }), 'NOT_FOUND');
  });
});
