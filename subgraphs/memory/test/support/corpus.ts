import { prng } from '../../../../test/support/prng';
import type { MemoryEntry } from '../../src/index';

export { prng };

const VERBS = ['fixed', 'refactored', 'added', 'removed', 'investigated', 'renamed', 'tested', 'reverted', 'documented', 'profiled', 'simplified', 'split'];
const NOUNS = [
  'cache', 'parser', 'router', 'scheduler', 'config loader', 'retry policy', 'snapshot store', 'websocket handler', 'login flow',
  'billing job', 'rate limiter', 'session registry', 'diff viewer', 'lockfile', 'worker pool', 'search index', 'token counter',
  'theme switcher', 'upload queue', 'audit log',
];
const ADJECTIVES = ['flaky', 'slow', 'broken', 'stale', 'duplicated', 'missing', 'noisy', 'racy', 'leaky', 'unbounded'];
const PARTS_A = ['load', 'parse', 'build', 'resolve', 'fetch', 'render', 'apply', 'merge', 'compute', 'validate', 'flush', 'watch'];
const PARTS_B = ['User', 'Config', 'Session', 'Project', 'Token', 'Patch', 'Route', 'Queue', 'Snapshot', 'Layout', 'Commit', 'Worker'];
const PARTS_C = ['Profile', 'File', 'State', 'Index', 'Options', 'Handler', 'Entries', 'Cursor', 'Result', 'Graph', 'Batch', 'Map'];
const DIRS = ['lib', 'core', 'api', 'ui', 'server', 'worker', 'utils', 'store', 'routes', 'hooks'];
const HARNESSES = ['claude-code', 'codex', 'opencode', 'pi', 'qwen-code'];

/** The agents corpus conversations belong to, one per harness. */
export const CORPUS_AGENTS = HARNESSES.map((h) => `agent-${h}`);

function pick<T>(rand: () => number, list: readonly T[]): T {
  return list[Math.floor(rand() * list.length)]!;
}

function identifier(rand: () => number): string {
  return `${pick(rand, PARTS_A)}${pick(rand, PARTS_B)}${pick(rand, PARTS_C)}`;
}

function path(rand: () => number): string {
  return `src/${pick(rand, DIRS)}/${pick(rand, PARTS_A)}${pick(rand, PARTS_B)}.ts`;
}

/** One plausible coding-agent message for `role`. */
function content(rand: () => number, role: string): string {
  if (role === 'user') {
    return `The ${pick(rand, NOUNS)} is ${pick(rand, ADJECTIVES)} again; can you look at ${path(rand)} and check ${identifier(rand)}? It started after the ${pick(rand, NOUNS)} change.`;
  }
  if (role === 'tool') {
    return `$ npm test -- ${path(rand).replace(/\.ts$/, '.test.ts')}\nPASS ${path(rand)} (${1 + Math.floor(rand() * 40)} tests)\nFAIL ${path(rand)}\n  ● ${identifier(rand)} › handles the ${pick(rand, ADJECTIVES)} ${pick(rand, NOUNS)}`;
  }
  return `I ${pick(rand, VERBS)} the ${pick(rand, NOUNS)} in ${path(rand)}: ${identifier(rand)} now calls ${identifier(rand)} before the ${pick(rand, NOUNS)} runs, so the ${pick(rand, ADJECTIVES)} ${pick(rand, NOUNS)} no longer shows up. I also ${pick(rand, VERBS)} ${identifier(rand)}.`;
}

export interface CorpusOptions {
  conversations: number;
  messagesPerConversation: number;
  /** @default 1 */
  seed?: number;
  /** The newest message's time. @default now */
  endAt?: Date;
  /** Days the corpus spans back from endAt. @default 60 */
  spanDays?: number;
  /** Index of the first conversation (to grow a corpus without repeating session ids). @default 0 */
  firstConversation?: number;
}

export interface CorpusConversation {
  sessionId: string;
  agent: string;
  channel: string;
  taskId: string | null;
}

/** The i-th corpus conversation: harness, agent and (for every 10th) a task id. */
export function corpusConversation(i: number): CorpusConversation {
  const harness = HARNESSES[i % HARNESSES.length]!;
  return {
    sessionId: `${harness}:corpus-${String(i).padStart(5, '0')}`,
    agent: `agent-${harness}`,
    channel: harness,
    taskId: i % 10 === 0 ? `corpus-task-${i}` : null,
  };
}

/**
 * A deterministic corpus of coding-agent conversations: user / assistant / tool messages naming
 * files, identifiers and components, spread over `spanDays` and in order within each conversation.
 * Dedupe keys are `m<n>`, so appending the corpus twice stores it once.
 */
export function corpus(opts: CorpusOptions): MemoryEntry[] {
  const rand = prng(opts.seed ?? 1);
  const endAt = (opts.endAt ?? new Date()).getTime();
  const span = (opts.spanDays ?? 60) * 24 * 3600 * 1000;
  const first = opts.firstConversation ?? 0;
  const out: MemoryEntry[] = [];
  for (let c = first; c < first + opts.conversations; c++) {
    const conv = corpusConversation(c);
    const startAt = endAt - span + rand() * span * 0.9;
    for (let n = 0; n < opts.messagesPerConversation; n++) {
      const role = n % 3 === 0 ? 'user' : n % 3 === 1 ? 'assistant' : 'tool';
      out.push({
        sessionId: conv.sessionId,
        agent: conv.agent,
        channel: conv.channel,
        taskId: conv.taskId,
        role,
        content: content(rand, role),
        dedupeKey: `m${n}`,
        createdAt: new Date(Math.min(endAt, startAt + n * 60_000)),
      });
    }
  }
  return out;
}
