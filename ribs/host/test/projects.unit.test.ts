import { ProjectOperationError } from '@keelson/ribs-contract';
import { MeshError } from '@keelson/schema';
import { InMemoryProjectsPort } from '@keelson/host-doubles';
import { toProjectOperationError } from '../src/projects/projectSeams';
import { rib, startHost } from './support/quietHost';

describe('project seams', () => {
  it('create a project that getProjects sees immediately', async () => {
    const { host } = await startHost([rib('demo')]);
    const ctx = host.context('demo')!;
    const project = await ctx.createProject!({ name: 'alpha' });
    expect(project).toMatchObject({ name: 'alpha', rootPath: '/workspace/alpha' });
    expect(ctx.getProjects!().map((p) => p.name)).toEqual(['alpha']);
  });

  it('reject invalid bodies with 400, unknown fields included, before reaching the projects domain', async () => {
    const projects = new InMemoryProjectsPort();
    const create = jest.spyOn(projects, 'createProject');
    const { host } = await startHost([rib('demo')], { projects });
    const ctx = host.context('demo')!;
    await expect(ctx.createProject!({ name: 'Bad Name' })).rejects.toMatchObject({ name: 'ProjectOperationError', status: 400, message: expect.stringMatching(/body\.name/) });
    await expect(ctx.createProject!({ name: 'ok', force: true } as never)).rejects.toMatchObject({ status: 400 });
    await expect(ctx.cloneProject!({ url: '' })).rejects.toMatchObject({ status: 400 });
    expect(create).not.toHaveBeenCalled();
  });

  it('carry the domain\'s conflict as 409', async () => {
    const { host } = await startHost([rib('demo')]);
    const ctx = host.context('demo')!;
    await ctx.createProject!({ name: 'alpha' });
    await expect(ctx.createProject!({ name: 'alpha' })).rejects.toEqual(new ProjectOperationError(409, "a project named 'alpha' already exists"));
  });

  it('answer 503 while ribs are still activating', async () => {
    let during: unknown;
    await startHost([
      rib('demo', {
        registerTools(ctx) {
          ctx.createProject!({ name: 'early' }).catch((err) => (during = err));
          return [];
        },
      }),
    ]);
    await new Promise((r) => setImmediate(r));
    expect(during).toMatchObject({ status: 503, message: expect.stringMatching(/retry after readiness/) });
  });

  it('stamp the lock holder as the rib, fail a second holder naming the first, and release idempotently', async () => {
    const { host, projects } = await startHost([rib('demo'), rib('other')]);
    const project = await host.context('demo')!.createProject!({ name: 'alpha' });
    const lock = await host.context('demo')!.acquireMutationLock!({ projectId: project.id, purpose: 'resolve-review' });
    expect(lock).toMatchObject({ holder: 'rib:demo', purpose: 'resolve-review' });
    await expect(host.context('other')!.acquireMutationLock!({ projectId: project.id, purpose: 'x' })).rejects.toMatchObject({
      status: 409,
      message: expect.stringMatching(/locked by rib:demo for 'resolve-review'/),
    });
    await lock.release();
    await lock.release();
    expect(projects.heldLocks()).toEqual([]);
  });

  it('lease a workspace that release() ends', async () => {
    const { host, projects } = await startHost([rib('demo')]);
    const ctx = host.context('demo')!;
    const project = await ctx.createProject!({ name: 'alpha' });
    const lease = await ctx.acquireWorkspace!({ projectId: project.id, purpose: 'review' });
    expect(lease).toMatchObject({ projectId: project.id, purpose: 'review', branch: expect.any(String), path: expect.any(String) });
    expect(projects.liveLeases()).toHaveLength(1);
    await lease.release();
    expect(projects.liveLeases()).toHaveLength(0);
  });

  it('map mesh errors to the seed\'s statuses', () => {
    expect(toProjectOperationError(new MeshError('CONFLICT', 'taken'))).toMatchObject({ status: 409, message: 'taken' });
    expect(toProjectOperationError(new MeshError('UPSTREAM_FAILED', 'clone failed'))).toMatchObject({ status: 502 });
    expect(toProjectOperationError(new MeshError('SERVICE_UNAVAILABLE', 'later'))).toMatchObject({ status: 503 });
    expect(toProjectOperationError(new MeshError('NOT_FOUND', 'no project'))).toMatchObject({ status: 400 });
    expect(toProjectOperationError(new Error('disk full'))).toMatchObject({ status: 500, message: 'disk full' });
  });
});
