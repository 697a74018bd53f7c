import { z } from 'zod';
import type { OpImplementation } from './opTypes';

const inputSchema = z
  .object({
    steps: z.number().int().min(0).max(10_000).default(5),
    intervalMs: z.number().int().min(0).max(60_000).default(200),
  })
  .default({ steps: 5, intervalMs: 200 });

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * The proof op (`countdown`): counts `steps` steps `intervalMs` apart with a log and a progress frame
 * each; a steering note is logged, and the note `finish` ends it early. Result `{ counted, steered }`.
 */
export const countdownOp: OpImplementation = async (ctx) => {
  const { steps, intervalMs } = inputSchema.parse(ctx.input ?? undefined);
  const steered: string[] = [];
  let finish = false;
  ctx.onSteer((note) => {
    steered.push(note);
    ctx.log(`steered: ${note}`);
    if (note.trim() === 'finish') finish = true;
  });
  let counted = 0;
  while (counted < steps && !finish && !ctx.signal.aborted) {
    await sleep(intervalMs, ctx.signal);
    if (ctx.signal.aborted) break;
    counted += 1;
    ctx.log(`step ${counted}/${steps}`);
    ctx.progress({ fraction: counted / steps, message: `step ${counted} of ${steps}` });
  }
  return { counted, steered };
};

/** The op kinds every worker runs. */
export const builtinOps = { countdown: countdownOp } as const;
