import type { RunningMesh } from '@keelson/stack';
import type { Progress } from './benchStack';

type ProjectsServices = RunningMesh['projects']['services'];

/** Every this-many-th project also gets a workspace lease (a real git worktree); every project gets a lock. */
export const LEASE_EVERY = 4;
/** Projects created at once: git init and commit per project dominate, and there are 2 cores. */
const PARALLEL = 4;

/**
 * Creates projects `bench-<from>` … `bench-<to - 1>` in-process through the domain services (git
 * init and an initial commit each, as createProject does), gives each a mutation lock and every
 * {@link LEASE_EVERY}-th a workspace lease, so both nested loaders of a project query find rows.
 */
export async function seedProjects(services: ProjectsServices, from: number, to: number, progress: Progress): Promise<void> {
  let next = from;
  let done = 0;
  const one = async (i: number) => {
    const project = await services.projects.create({ name: `bench-${String(i).padStart(3, '0')}` });
    await services.locks.acquire({ projectId: project.id, purpose: 'bench', holder: `bench-holder-${i}` });
    if (i % LEASE_EVERY === 0) await services.workspaces.acquire({ projectId: project.id, purpose: 'bench' });
  };
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (next < to) {
        await one(next++);
        done += 1;
        if (done % 10 === 0 || from + done === to) progress(`seeded ${from + done}/${to} projects`);
      }
    }),
  );
}

/** How many leases {@link seedProjects} gives projects 0 … n-1. */
export function expectedLeases(n: number): number {
  return Math.ceil(n / LEASE_EVERY);
}
