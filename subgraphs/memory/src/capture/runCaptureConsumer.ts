import { DurableConsumer, type DurableConsumerOptions } from '@keelson/platform';
import { streams, type EventEnvelope } from '@keelson/schema';
import type { EntityManager } from 'typeorm';
import { z } from 'zod';
import { clipContent, type MemoryEntry } from '../memory/memory.input';
import type { MemoryService } from '../memory/memory.service';
import type { CapturedRun, RunTurnSource } from './runTurnSource';

export interface RunCaptureConsumerOptions extends Omit<DurableConsumerOptions, 'name' | 'stream'> {
  memory: MemoryService;
  source: RunTurnSource;
  /** @default memory-run-capture */
  name?: string;
  /** @default runs */
  stream?: string;
  /** Bound on one fetch of a batch's runs. @default 10000 */
  fetchTimeoutMs?: number;
}

const nodeSucceededSchema = z.object({ runId: z.string().min(1), nodeId: z.string().min(1), launch: z.number().int().optional() });

/** The conversation a run's prompt-node turns are stored in. */
export const runSessionKey = (runId: string) => `run:${runId}`;
/** The agent of a workflow's prompt-node turns (what `contextForTurn` / `memorySearch` filter by). */
export const workflowAgent = (workflowName: string) => `workflow:${workflowName}`;

interface RunTurns {
  run: CapturedRun;
  entries: MemoryEntry[];
}

/**
 * Run capture: tails the `runs` stream and stores every prompt-node turn of a run in memory, exactly
 * once (see DurableConsumer). On `NODE_SUCCEEDED` the batch's runs are read through the RunTurnSource
 * (one request); a prompt node becomes two messages of the conversation `run:<runId>` (agent
 * `workflow:<name>`, channel `run`): the prompt its turn was sent, as the worker recorded it on the
 * node (`user`; left out for a node without one, e.g. from before it was recorded), and the turn's
 * settled text (`assistant`), with dedupe keys `<runId>:<nodeId>:prompt` / `:output` — a node
 * succeeds once per run (a resume never re-runs it), so the keys hold across retries and launches.
 */
export class RunCaptureConsumer extends DurableConsumer<RunTurns[]> {
  private readonly fetchTimeoutMs: number;

  constructor(private readonly opts: RunCaptureConsumerOptions) {
    super({ ...opts, name: opts.name ?? 'memory-run-capture', stream: opts.stream ?? streams.runs });
    this.fetchTimeoutMs = opts.fetchTimeoutMs ?? 10_000;
  }

  protected async prepare(events: readonly EventEnvelope[]): Promise<RunTurns[]> {
    const succeeded: { runId: string; nodeId: string; launch?: number }[] = [];
    for (const e of events) {
      if (e.type !== 'NODE_SUCCEEDED') continue;
      const r = nodeSucceededSchema.safeParse(e.payload);
      if (r.success) succeeded.push(r.data);
      else this.opts.log.warn({ consumer: this.name, seq: e.seq, issues: r.error.issues }, 'skipping a malformed runs event');
    }
    if (!succeeded.length) return [];
    const ids = [...new Set(succeeded.map((s) => s.runId))];
    const signal = AbortSignal.any([this.abort.signal, AbortSignal.timeout(this.fetchTimeoutMs)]);
    const runs = new Map((await this.opts.source.runs(ids, signal)).map((r) => [r.id, r]));
    const byRun = new Map<string, RunTurns>();
    for (const s of succeeded) {
      const run = runs.get(s.runId);
      if (!run) {
        this.opts.log.warn({ runId: s.runId, nodeId: s.nodeId }, 'a run named by NODE_SUCCEEDED was not found; its turn is not captured');
        continue;
      }
      const entries = this.turnOf(run, s.nodeId, s.launch);
      if (!entries.length) continue;
      const turns = byRun.get(run.id) ?? { run, entries: [] };
      turns.entries.push(...entries);
      byRun.set(run.id, turns);
    }
    return [...byRun.values()];
  }

  protected async apply(m: EntityManager, prepared: RunTurns[]): Promise<void> {
    for (const { run, entries } of prepared) {
      await this.opts.memory.upsertConversations(m, [
        {
          sessionKey: runSessionKey(run.id),
          agent: workflowAgent(run.workflowName),
          channel: 'run',
          metadata: { runId: run.id, workflowName: run.workflowName, ribId: run.ribId, projectId: run.projectId },
        },
      ]);
      await this.opts.memory.appendMany(entries, m);
    }
  }

  /** A succeeded prompt node's prompt and answer; nothing for any other node. */
  private turnOf(run: CapturedRun, nodeId: string, launch: number | undefined): MemoryEntry[] {
    const node = run.nodes.find((n) => n.id === nodeId);
    if (!node || node.type !== 'prompt' || node.status !== 'SUCCEEDED') return [];
    const metadata = { kind: 'prompt-node', runId: run.id, nodeId, workflowName: run.workflowName, ...(launch ? { launch } : {}) };
    const common = { sessionId: runSessionKey(run.id), agent: workflowAgent(run.workflowName), channel: 'run', metadata };
    const at = (v: string | null | undefined) => (v ? new Date(v) : null);
    return [
      ...(node.prompt ? [{ ...common, role: 'user', content: clipContent(node.prompt), dedupeKey: `${run.id}:${nodeId}:prompt`, createdAt: at(node.startedAt) }] : []),
      { ...common, role: 'assistant', content: clipContent(node.output ?? ''), dedupeKey: `${run.id}:${nodeId}:output`, createdAt: at(node.completedAt) },
    ];
  }
}
