import { serviceCaller, type Logger, type ServiceCall, type ServiceIdentity } from '@keelson/service';
import { z } from 'zod';

/** One node of a run as capture reads it. */
export interface CapturedRunNode {
  id: string;
  /** prompt, bash, script, approval or cancel. */
  type: string;
  status: string;
  /** A prompt node's settled text. */
  output: string | null;
  /** A prompt node's prompt as its turn was sent (recorded by the worker; null before the turn or for older runs). */
  prompt: string | null;
  startedAt?: string | null;
  completedAt?: string | null;
}

/** A run as capture reads it: who it belongs to, and each node's recorded prompt and output. */
export interface CapturedRun {
  id: string;
  workflowName: string;
  ribId: string | null;
  projectId: string | null;
  nodes: CapturedRunNode[];
}

/**
 * The port run capture reads runs through (events carry ids only). The runs subgraph provides the
 * real one ({@link GraphqlRunTurnSource}); tests provide their own.
 */
export interface RunTurnSource {
  /** The runs with these ids, in any order; ids it does not know are left out. Rejects when they cannot be read now. */
  runs(ids: readonly string[], signal: AbortSignal): Promise<CapturedRun[]>;
}

const runSchema = z.object({
  id: z.string(),
  workflowName: z.string(),
  ribId: z.string().nullable(),
  projectId: z.string().nullable(),
  nodes: z.array(
    z.object({
      id: z.string(),
      type: z.string(),
      status: z.string(),
      output: z.string().nullable(),
      prompt: z.string().nullable(),
      startedAt: z.string().nullish(),
      completedAt: z.string().nullish(),
    }),
  ),
});

const RUN_FIELDS = 'id workflowName rib { id } project { id } nodes { id type status output prompt startedAt completedAt }';

/**
 * The real RunTurnSource: the runs subgraph's `run(id)` over HTTP (KEELSON_RUNS_URL), every run of a
 * batch in one request. A run the answer does not parse as is logged and left out.
 */
export class GraphqlRunTurnSource implements RunTurnSource {
  private readonly call: ServiceCall;

  constructor(
    /** The runs subgraph's GraphQL endpoint. */
    readonly url: string,
    /** Who memory capture is to that subgraph (it refuses calls without an assertion). */
    identity: ServiceIdentity,
    private readonly log?: Logger,
  ) {
    this.call = serviceCaller('the runs subgraph', url, { identity });
  }

  async runs(ids: readonly string[], signal: AbortSignal): Promise<CapturedRun[]> {
    if (!ids.length) return [];
    const vars = Object.fromEntries(ids.map((id, i) => [`r${i}`, id]));
    const query = `query MemoryCaptureRuns(${ids.map((_, i) => `$r${i}: ID!`).join(', ')}) {
      ${ids.map((_, i) => `r${i}: run(id: $r${i}) { ${RUN_FIELDS} }`).join('\n      ')}
    }`;
    const data = await this.call<Record<string, (Record<string, unknown> & { rib?: { id: string } | null; project?: { id: string } | null }) | null>>(query, vars, {
      signal,
    });
    const runs: CapturedRun[] = [];
    for (const raw of Object.values(data)) {
      if (!raw) continue;
      const r = runSchema.safeParse({ ...raw, ribId: raw.rib?.id ?? null, projectId: raw.project?.id ?? null });
      if (r.success) runs.push(r.data);
      else this.log?.warn({ runId: raw.id, issues: r.error.issues }, 'skipping a run the runs subgraph answered in an unexpected shape');
    }
    return runs;
  }
}
