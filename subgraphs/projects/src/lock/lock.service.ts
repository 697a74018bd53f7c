import { randomUUID } from 'node:crypto';
import { MeshError, isUuid } from '@keelson/schema';
import { parseInput } from '@keelson/kit';
import { In } from 'typeorm';
import { z } from 'zod';
import { appendProjectEvent } from '../project/project.events';
import { Project } from '../project/project.entity';
import type { ProjectsDeps } from '../settings';
import { MutationLock } from './lock.entity';

const label = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
const acquireSchema = z.strictObject({ projectId: z.string(), purpose: label, holder: label });

/**
 * The advisory per-project mutation lock: a second holder fails at once with CONFLICT naming the
 * current holder and purpose. KEELSON_DISABLE_MUTATION_LOCK bypasses the check (logged).
 */
export class LockService {
  constructor(private readonly deps: ProjectsDeps) {}

  /** The current (oldest) lock per project. */
  async currentFor(projectIds: readonly string[]): Promise<MutationLock[]> {
    const rows = await this.deps.dataSource.getRepository(MutationLock).find({
      where: { projectId: In([...projectIds]) },
      order: { acquiredAt: 'ASC' },
    });
    const seen = new Set<string>();
    return rows.filter((r) => (seen.has(r.projectId) ? false : (seen.add(r.projectId), true)));
  }

  async acquire(args: { projectId: string; purpose: string; holder: string }): Promise<MutationLock> {
    const input = parseInput(acquireSchema, args);
    if (!isUuid(input.projectId)) {
      throw new MeshError('NOT_FOUND', `project ${JSON.stringify(input.projectId)} does not exist`);
    }
    return this.deps.dataSource.transaction(async (m) => {
      // The project row lock serializes concurrent acquirers of the same project.
      const project = await m.getRepository(Project).findOne({ where: { id: input.projectId }, lock: { mode: 'pessimistic_write' } });
      if (!project) throw new MeshError('NOT_FOUND', `project ${JSON.stringify(input.projectId)} does not exist`);
      const held = await m.getRepository(MutationLock).findOne({ where: { projectId: project.id }, order: { acquiredAt: 'ASC' } });
      if (held) {
        if (!this.deps.settings.disableMutationLock) {
          throw new MeshError(
            'CONFLICT',
            `project "${project.name}" is locked by ${held.holder} for "${held.purpose}" (since ${held.acquiredAt.toISOString()})`,
            { holder: held.holder, purpose: held.purpose, lockId: held.id },
          );
        }
        this.deps.log.warn(
          { project: project.name, holder: held.holder, purpose: held.purpose },
          'KEELSON_DISABLE_MUTATION_LOCK is set: granting a second mutation lock',
        );
      }
      const lock = await m.getRepository(MutationLock).save(
        Object.assign(new MutationLock(), {
          id: randomUUID(),
          projectId: project.id,
          purpose: input.purpose,
          holder: input.holder,
          acquiredAt: new Date(),
        }),
      );
      await appendProjectEvent(this.deps.events, m, 'MUTATION_LOCK_ACQUIRED', { projectId: project.id, lockId: lock.id });
      return lock;
    });
  }

  /** Unknown (or already released) ids are NOT_FOUND. */
  async release(id: string): Promise<boolean> {
    if (!isUuid(id)) throw new MeshError('NOT_FOUND', `mutation lock ${JSON.stringify(id)} does not exist`);
    return this.deps.dataSource.transaction(async (m) => {
      const lock = await m.getRepository(MutationLock).findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
      if (!lock) throw new MeshError('NOT_FOUND', `mutation lock ${JSON.stringify(id)} does not exist (already released?)`);
      await m.getRepository(MutationLock).delete({ id });
      await appendProjectEvent(this.deps.events, m, 'MUTATION_LOCK_RELEASED', { projectId: lock.projectId, lockId: id });
      return true;
    });
  }
}
