import type { ReplyContext, ReplySpec, Rule } from '@keelson/model-server';

/**
 * Scripted swarm agents for the local model server: each agent recognises itself from its system
 * prompt (`You are @<handle>, …`), reads the batch of messages in its turn prompt, and calls the
 * chat_* tools deterministically. Resumed sessions are read through `earlierUserTexts`.
 */

/** The handle an agent's system prompt names. */
export function selfHandle(ctx: ReplyContext): string | undefined {
  return /You are @([a-z0-9][a-z0-9_-]*),/.exec(ctx.system)?.[1];
}

/** The roster's handles, in order (the lead first). */
export function rosterHandles(ctx: ReplyContext): string[] {
  return [...ctx.system.matchAll(/^- @([a-z0-9][a-z0-9_-]*):/gm)].map((m) => m[1]!);
}

/** `[msg_…] @author (…):` headers of the messages in a turn prompt, in order. */
export function messagesIn(text: string): { id: string; author: string; body: string }[] {
  const out: { id: string; author: string; body: string }[] = [];
  const re = /^\[(msg_[0-9a-z]+)\] (\S+) \([^)]*\):\n([\s\S]*?)(?=\n\n\[msg_|\n\nMeanwhile|\n\nNotes from|\n\nBudget:|$)/gm;
  for (const m of text.matchAll(re)) out.push({ id: m[1]!, author: m[2]!, body: m[3]! });
  return out;
}

const isLead = (ctx: ReplyContext) => ctx.system.includes('You lead the swarm');
const call = (name: string, args: Record<string, unknown>): ReplySpec => ({ toolCall: { name, arguments: args } });

export interface ThreeAgentOptions {
  /** What each worker answers, by agent name (the part after the handle prefix). */
  answers?: Record<string, string>;
  /** The lead's conclusion once every answer is in. */
  conclusion?: string;
  /** The lead never concludes (tests of nudges and stalls). */
  leadNeverConcludes?: boolean;
  /** Delay every worker's first model call (a turn to kill a worker in). */
  workerDelayMs?: number;
}

/**
 * A lead and its workers: the lead asks each worker by @mention, each worker replies in the lead's
 * thread and declares itself done, and the lead reports once every answer is in (or never, with
 * `leadNeverConcludes`).
 */
export function threeAgentRules(opts: ThreeAgentOptions = {}): Rule[] {
  const answers = opts.answers ?? { alice: 'A is fine', bob: 'B is fine' };
  const conclusion = opts.conclusion ?? 'Both parts are fine: A is fine, B is fine.';
  return [
    {
      name: 'swarm-lead',
      reply: (ctx) => {
        if (!isLead(ctx)) return undefined;
        const workers = rosterHandles(ctx).filter((h) => h !== selfHandle(ctx));
        if (ctx.userText.includes('The task:')) {
          return [
            ...workers.map((h) => call('chat_post', { body: `@${h} please check your part of the task and reply in this thread.` })),
            { text: 'asked every worker' },
          ];
        }
        const heard = [ctx.userText, ...ctx.earlierUserTexts].join('\n');
        const all = Object.values(answers).every((a) => heard.includes(a));
        if (all && !opts.leadNeverConcludes) return [call('chat_report', { conclusion }), { text: 'reported' }];
        return { text: 'waiting for the other answers' };
      },
    },
    {
      name: 'swarm-worker',
      reply: (ctx) => {
        const me = selfHandle(ctx);
        if (!me || isLead(ctx)) return undefined;
        const name = me.slice(me.indexOf('-') + 1);
        const ask = messagesIn(ctx.userText).find((m) => m.body.includes(`@${me}`));
        if (!ask) return { text: 'nothing for me' };
        const delay = opts.workerDelayMs && ctx.earlierUserTexts.length === 0 ? { delayMs: opts.workerDelayMs } : {};
        return [
          { ...call('chat_reply', { messageId: ask.id, body: answers[name] ?? `${name} has nothing to add` }), ...delay },
          call('chat_done', { summary: `${name} answered` }),
          { text: 'answered' },
        ];
      },
    },
  ];
}
