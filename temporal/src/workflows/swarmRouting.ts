// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
// The swarm's routing: queued message ids are hydrated by an activity, and each message goes to the
// inboxes of the agents it wakes (schema's `route()`), the thread's other participants as background.
import { route, swarmTuning } from '@keelson/schema';
import type { SwarmActivities } from '../activities/swarm/swarmActivities';
import type { HydratedMessage } from '../activities/swarm/swarmTypes';
import type { SwarmRun } from './swarmRun';
import { active, type CarriedSwarmState, type Emit } from './swarmState';

/** Routes one hydrated message: the agents it wakes get it in their inbox, the thread's others as background. */
export function ingestMessage(st: CarriedSwarmState, own: ReadonlySet<string>, m: HydratedMessage, emit: Emit): void {
  const agent = (id: string) => st.agents.find((a) => a.id === id);
  const author = st.agents.find((a) => a.botUserId === m.authorId);
  const isRoot = m.threadRootId === m.id;
  const thread = (st.threads[m.threadRootId] ??= { participants: [] });
  if (isRoot && author) thread.starter = author.id;
  const woke = route({
    message: { id: m.id, authorId: m.authorId, authorKind: m.authorKind, threadRootId: m.threadRootId, mentions: m.mentions, ribPost: own.has(m.id) },
    roster: st.agents.map((a) => ({ id: a.id, handle: a.handle, botUserId: a.botUserId, lead: a.lead, active: active(a) })),
    threadParticipants: thread.participants,
    ...(thread.starter !== undefined ? { threadStarter: thread.starter } : {}),
  });
  for (const id of woke) agent(id)!.inbox.push(m.id);
  if (!isRoot) {
    for (const id of thread.participants) {
      const a = agent(id);
      if (!a || woke.includes(id) || id === author?.id) continue;
      a.background.push({ messageId: m.id, threadRootId: m.threadRootId, author: m.authorHandle ? `@${m.authorHandle}` : 'someone', preview: m.preview });
      if (a.background.length > swarmTuning.backgroundSize) a.background.splice(0, a.background.length - swarmTuning.backgroundSize);
    }
  }
  // Whoever wrote in a thread, or was woken by it, is in it from now on.
  for (const id of [...(author ? [author.id] : []), ...woke]) if (!thread.participants.includes(id)) thread.participants.push(id);
  emit('MESSAGE_INGESTED', { messageId: m.id, threadRootId: m.threadRootId, authorId: m.authorId, ...(author ? { authorAgentId: author.id } : {}), woke });
}

/** Hydrates and routes every queued message, batch by batch, until the queue is empty. */
export async function ingestSwarmQueue(run: SwarmRun, acts: Pick<SwarmActivities, 'swarmHydrate'>): Promise<void> {
  for (let fresh = run.nextHydration(); fresh; fresh = run.nextHydration()) {
    const { messages } = await acts.swarmHydrate({ swarmId: run.input.swarmId, messageIds: fresh });
    run.ingest(messages);
  }
}
