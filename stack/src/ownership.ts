import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { endOrphanGroups, setSupervisorOwner } from '@keelson/platform';
import { z } from 'zod';

/** One process a start found left behind by an earlier (crashed) start on the same Keelson home. */
export const ownedProcessNoteSchema = z.object({
  what: z.string(),
  pid: z.number().int(),
  outcome: z.enum(['adopted', 'ended']),
  detail: z.string().optional(),
});
export type OwnedProcessNote = z.infer<typeof ownedProcessNoteSchema>;

const lastStartSchema = z.object({ at: z.string(), pid: z.number().int(), processes: z.array(ownedProcessNoteSchema) });
export type LastStart = z.infer<typeof lastStartSchema>;

/** `<home>/run/last-start.json`: what the latest start adopted or ended (read by `npm run doctor`). */
export function lastStartFile(home: string): string {
  return join(home, 'run', 'last-start.json');
}

/**
 * The start's first step on `home`: every process group this process starts from now on is marked
 * with it, and the harness CLI and bash/script node groups an earlier process on the same home
 * left orphaned (its owner dead) are ended. Returns what was ended.
 */
export async function claimHome(home: string): Promise<OwnedProcessNote[]> {
  setSupervisorOwner(home);
  const ended = await endOrphanGroups(home);
  return ended.map((o) => ({
    what: o.kind === 'turn' ? 'harness CLI group' : 'bash/script node group',
    pid: o.pgid,
    outcome: 'ended' as const,
    detail: `owner pid ${o.ownerPid} gone; ran ${o.command.join(' ').slice(0, 160)}`,
  }));
}

/** Writes `<home>/run/last-start.json` (atomically: a crash leaves the previous one). */
export async function recordStart(home: string, processes: OwnedProcessNote[]): Promise<void> {
  const file = lastStartFile(home);
  await mkdir(join(home, 'run'), { recursive: true });
  const body: LastStart = { at: new Date().toISOString(), pid: process.pid, processes };
  await writeFile(`${file}.tmp`, `${JSON.stringify(body, null, 2)}\n`);
  await rename(`${file}.tmp`, file);
}

/** The latest start's record, or undefined when there is none (or it is unreadable). */
export async function readLastStart(home: string): Promise<LastStart | undefined> {
  try {
    return lastStartSchema.parse(JSON.parse(await readFile(lastStartFile(home), 'utf8')));
  } catch {
    return undefined;
  }
}
