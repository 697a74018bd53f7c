import { Context } from '@temporalio/activity';

/**
 * A turn's steer queue as its activity reads it (seed 002's `/steer`): the notes its own workflow
 * holds for it (`query(arg)`: every note so far, in order), asked between tool rounds; each call
 * returns only the notes not read before, after `onNote` has recorded each.
 */
export function workflowSteerReader(query: string, arg: string, onNote?: (note: string) => Promise<void>): () => Promise<readonly string[]> {
  let read = 0;
  return async () => {
    const activity = Context.current();
    const workflowId = activity.info.workflowExecution?.workflowId;
    if (!workflowId) return [];
    const all = await activity.client.workflow.getHandle(workflowId).query<string[], [string]>(query, arg);
    const fresh = all.slice(read);
    read = all.length;
    for (const note of fresh) await onNote?.(note);
    return fresh;
  };
}
