import type { Conversation } from '../conversation/conversation';

/** A request a CLI makes beside the agent turn, and the short plain answer it gets. */
interface SideRequest {
  name: string;
  test(conv: Conversation): boolean;
  reply(conv: Conversation): string;
}

const SIDE_REQUESTS: SideRequest[] = [
  {
    // opencode's title generator, and claude-code's session titles (which want JSON). Both come
    // without tools; an agent turn's long prompt may well mention titles.
    name: 'side:title',
    test: (c) =>
      c.tools.length === 0 &&
      (/\btitle generator\b/i.test(c.system) || /\bgenerate (?:a|an)\b[^.\n]{0,40}\btitle\b/i.test(c.system) || /^Generate a title\b/i.test(c.userText)),
    reply: (c) => (/\bjson\b/i.test(c.system) ? JSON.stringify({ title: 'Scripted session' }) : 'Scripted session'),
  },
  {
    // claude-code's topic detection.
    name: 'side:topic',
    test: (c) => c.tools.length === 0 && /isNewTopic/.test(c.system),
    reply: () => JSON.stringify({ isNewTopic: false, title: null }),
  },
  {
    // qwen-code's memory extraction agent, forked after each turn with the write tools. (Its main
    // prompt talks about managed auto-memory too, so only the subagent's own words count.)
    name: 'side:memory',
    test: (c) => /\bmemory extraction (?:subagent|agent|assistant)\b/i.test(c.system) || /^Managed memory has \w+ directories\b/.test(c.userText),
    reply: () => 'Nothing to save.',
  },
];

/** The side request `conv` is, with its answer; undefined for an agent turn. */
export function answerSideRequest(conv: Conversation): { name: string; text: string } | undefined {
  const side = SIDE_REQUESTS.find((s) => s.test(conv));
  return side && { name: side.name, text: side.reply(conv) };
}
