import { z } from 'zod';
import { describeZodError } from './zodMessage';

/**
 * The workflow definition: a DAG of nodes a run executes (YAML or JSON, seed 000 "contributeWorkflows").
 * Pure data and its validation; the runs catalog reads files, the `dagRun` workflow executes a plan
 * derived from it (`planOf`). Every rejection names the field and the reason.
 */

/** `fast` | `balanced` | `deep`: the model class a prompt node asks for (resolved by the provider registry). */
export const modelClasses = ['fast', 'balanced', 'deep'] as const;
export type ModelClass = (typeof modelClasses)[number];

/** A hint forwarded only to providers that support it. */
export const reasoningEfforts = ['none', 'low', 'medium', 'high', 'xhigh'] as const;
export type ReasoningEffort = (typeof reasoningEfforts)[number];

export const workflowNodeTypes = ['prompt', 'bash', 'script', 'approval', 'cancel'] as const;
export type WorkflowNodeType = (typeof workflowNodeTypes)[number];

/** Interpreters a `script` node may name. */
export const scriptRuntimes = ['bash', 'sh', 'node', 'python3'] as const;
export type ScriptRuntime = (typeof scriptRuntimes)[number];

/** Limits of one definition. */
export const workflowLimits = {
  nodes: 200,
  /** Bytes of one bash/script/prompt body. */
  bodyBytes: 64 * 1024,
  retries: 10,
  /** Longest node timeout. */
  maxTimeoutMs: 24 * 60 * 60 * 1000,
  minTimeoutMs: 1000,
  /** @default node timeout when neither the node nor the workflow sets one: 30 minutes */
  defaultTimeoutMs: 30 * 60 * 1000,
} as const;

/** UTF-8 length of a string in bytes. */
export function utf8Bytes(s: string): number {
  return new TextEncoder().encode(s).length;
}

const DURATION = /^(\d+)(ms|s|m|h)$/;
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

/** `30s`, `5m`, `1h`, `250ms`, or a number of milliseconds → milliseconds. */
export function parseDuration(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value > 0 ? value : undefined;
  const m = DURATION.exec(value.trim());
  if (!m) return undefined;
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
}

const durationSchema = z
  .union([z.number(), z.string()], { error: 'expected a duration: milliseconds or a string like "30s", "5m", "1h"' })
  .transform((value, ctx) => {
    const ms = parseDuration(value);
    if (ms === undefined) {
      ctx.addIssue({ code: 'custom', message: `expected a duration like "30s", "5m", "1h" or a positive integer of milliseconds, got ${JSON.stringify(value)}` });
      return z.NEVER;
    }
    if (ms < workflowLimits.minTimeoutMs || ms > workflowLimits.maxTimeoutMs) {
      ctx.addIssue({ code: 'custom', message: `must be between 1s and 24h, got ${JSON.stringify(value)}` });
      return z.NEVER;
    }
    return ms;
  });

/** Workflow names: what `startWorkflow(name)` takes and what a Temporal workflow id embeds. */
export const workflowNameSchema = z
  .string({ error: 'expected a string' })
  .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'must be 1 to 64 characters: a-z, 0-9, ".", "_" and "-", starting with a letter or digit');

export const nodeIdSchema = z
  .string({ error: 'expected a string' })
  .regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, 'must be 1 to 64 characters: letters, digits, "_" and "-", starting with a letter');

const inputNameSchema = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'input names are 1 to 64 characters: letters, digits and "_", not starting with a digit');

const body = (what: string) =>
  z
    .string({ error: `expected the ${what} as a string` })
    .min(1, 'must not be empty')
    .refine((s) => utf8Bytes(s) <= workflowLimits.bodyBytes, `must be at most ${workflowLimits.bodyBytes} bytes`);

const envSchema = z.record(
  z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names are letters, digits and "_"'),
  z.string({ error: 'environment values are strings' }),
);

/** Runs the node only when a node it depends on (directly or not) produced a matching value. */
export const whenSchema = z
  .strictObject({
    node: nodeIdSchema,
    equals: z.string().optional(),
    notEquals: z.string().optional(),
    matches: z.string().optional(),
  })
  .superRefine((w, ctx) => {
    const set = [w.equals, w.notEquals, w.matches].filter((v) => v !== undefined).length;
    if (set !== 1) ctx.addIssue({ code: 'custom', message: 'give exactly one of equals, notEquals, matches' });
    if (w.matches !== undefined) {
      try {
        new RegExp(w.matches);
      } catch (err) {
        ctx.addIssue({ code: 'custom', path: ['matches'], message: `not a regular expression: ${(err as Error).message}` });
      }
    }
  });
export type NodeCondition = z.infer<typeof whenSchema>;

const nodeCommon = {
  id: nodeIdSchema,
  description: z.string().max(500).optional(),
  depends_on: z.array(nodeIdSchema, { error: 'expected a list of node ids' }).max(workflowLimits.nodes).default([]),
  when: whenSchema.optional(),
  timeout: durationSchema.optional(),
  retries: z.number({ error: 'expected a number' }).int('must be an integer').min(0, 'must be at least 0').max(workflowLimits.retries, `must be at most ${workflowLimits.retries}`).optional(),
};

const promptNodeSchema = z.strictObject({
  ...nodeCommon,
  type: z.literal('prompt'),
  prompt: body('prompt'),
  system: z.string().max(workflowLimits.bodyBytes).optional(),
  /** Tool names the turn may call; rib tools are default-off and run only when named here. Empty or absent: text-only. */
  allowed_tools: z.array(z.string().min(1).max(128)).max(100).optional(),
  model: z.string().min(1).max(200).optional(),
  modelClass: z.enum(modelClasses, { error: `expected one of ${modelClasses.join(', ')}` }).optional(),
  reasoningEffort: z.enum(reasoningEfforts, { error: `expected one of ${reasoningEfforts.join(', ')}` }).optional(),
});

/**
 * What a bash or script node may do beyond its sandbox's defaults (it runs under bubblewrap: only the
 * run's cwd and `$ARTIFACTS_DIR` writable, their `.git` and `.keelson` read-only, no network).
 */
const sandboxFields = {
  /** The host's network (fetching dependencies, calling a service); it then reaches the host's loopback services too. @default false */
  network: z.boolean({ error: 'expected true or false' }).optional(),
  /** Writes the repository's git metadata (the cwd's `.git`, a worktree's git directories): a node that commits. @default false */
  gitWrite: z.boolean({ error: 'expected true or false' }).optional(),
};

const bashNodeSchema = z.strictObject({
  ...nodeCommon,
  type: z.literal('bash'),
  bash: body('command'),
  env: envSchema.optional(),
  ...sandboxFields,
});

const scriptNodeSchema = z.strictObject({
  ...nodeCommon,
  type: z.literal('script'),
  script: body('script'),
  runtime: z.enum(scriptRuntimes, { error: `expected one of ${scriptRuntimes.join(', ')}` }),
  env: envSchema.optional(),
  ...sandboxFields,
});

const approvalNodeSchema = z.strictObject({
  ...nodeCommon,
  type: z.literal('approval'),
  /** What the operator is asked; files named as `$ARTIFACTS_DIR/<path>` ride along as artifacts. */
  prompt: body('prompt'),
  /** An answer other than `approve`: fail the node (default) or continue with the text as its output. */
  on_feedback: z.enum(['fail', 'continue'], { error: 'expected "fail" or "continue"' }).default('fail'),
});

const cancelNodeSchema = z.strictObject({
  ...nodeCommon,
  type: z.literal('cancel'),
  /** Why the run stops; becomes the run's error. */
  reason: z.string().min(1, 'must not be empty').max(2000),
});

const nodeSchema = z.discriminatedUnion('type', [promptNodeSchema, bashNodeSchema, scriptNodeSchema, approvalNodeSchema, cancelNodeSchema], {
  error: (issue) =>
    issue.code === 'invalid_union'
      ? `expected a node type: one of ${workflowNodeTypes.join(', ')}`
      : undefined,
});

const inputSpecSchema = z.strictObject({
  description: z.string().max(500).optional(),
  required: z.boolean().default(false),
  default: z.string().optional(),
});

/** The top level of a definition. Unknown keys are rejected at every level. */
export const workflowDefinitionSchema = z
  .strictObject({
    name: workflowNameSchema,
    description: z.string().max(2000).optional(),
    /** String inputs a start may pass; undeclared names are rejected when any are declared. */
    inputs: z.record(inputNameSchema, inputSpecSchema).default({}),
    /** Starting it needs a project (it runs at the project root). */
    requiresProject: z.boolean().default(false),
    /** Run in a leased git worktree of the project instead of its live checkout. */
    worktree: z.strictObject({ enabled: z.boolean() }).default({ enabled: false }),
    /** Defaults for prompt nodes. */
    model: z.string().min(1).max(200).optional(),
    modelClass: z.enum(modelClasses, { error: `expected one of ${modelClasses.join(', ')}` }).optional(),
    reasoningEffort: z.enum(reasoningEfforts, { error: `expected one of ${reasoningEfforts.join(', ')}` }).optional(),
    /** Default node timeout. @default 30m */
    timeout: durationSchema.optional(),
    nodes: z
      .array(nodeSchema, { error: 'expected a list of nodes' })
      .min(1, 'a workflow needs at least one node')
      .max(workflowLimits.nodes, `at most ${workflowLimits.nodes} nodes`),
  })
  .superRefine((def, ctx) => checkGraph(def.nodes, ctx));

export type WorkflowDefinition = z.infer<typeof workflowDefinitionSchema>;
export type WorkflowNode = WorkflowDefinition['nodes'][number];
export type WorkflowInputSpec = z.infer<typeof inputSpecSchema>;

type GraphNode = { id: string; depends_on: string[]; when?: { node: string } };

/** Known ids, no self-dependency, no duplicates, no cycle, `when.node` an ancestor. */
function checkGraph(nodes: readonly GraphNode[], ctx: z.RefinementCtx): void {
  const index = new Map<string, number>();
  nodes.forEach((n, i) => {
    if (index.has(n.id)) {
      ctx.addIssue({ code: 'custom', path: ['nodes', i, 'id'], message: `duplicate node id "${n.id}" (also nodes.${index.get(n.id)})` });
    } else index.set(n.id, i);
  });
  const known = [...index.keys()].join(', ');
  let broken = false;
  nodes.forEach((n, i) => {
    n.depends_on.forEach((dep, j) => {
      if (dep === n.id) {
        broken = true;
        ctx.addIssue({ code: 'custom', path: ['nodes', i, 'depends_on', j], message: `node "${n.id}" cannot depend on itself` });
      } else if (!index.has(dep)) {
        broken = true;
        ctx.addIssue({ code: 'custom', path: ['nodes', i, 'depends_on', j], message: `unknown node "${dep}" (known: ${known})` });
      }
    });
    if (new Set(n.depends_on).size !== n.depends_on.length) {
      ctx.addIssue({ code: 'custom', path: ['nodes', i, 'depends_on'], message: 'lists a node more than once' });
    }
  });
  if (broken) return;
  const cycle = findCycle(nodes);
  if (cycle) {
    const at = index.get(cycle[0]!)!;
    ctx.addIssue({ code: 'custom', path: ['nodes', at, 'depends_on'], message: `dependency cycle: ${cycle.join(' → ')}` });
    return;
  }
  nodes.forEach((n, i) => {
    if (!n.when) return;
    if (!ancestorsOf(nodes, n.id).has(n.when.node)) {
      ctx.addIssue({
        code: 'custom',
        path: ['nodes', i, 'when', 'node'],
        message: `"${n.when.node}" is not a node "${n.id}" depends on (directly or transitively), so its output is not known when "${n.id}" is ready`,
      });
    }
  });
}

/** A dependency cycle as `[a, b, …, a]` (a depends on b, …, which depends on a), or undefined. */
export function findCycle(nodes: readonly GraphNode[]): string[] | undefined {
  const deps = new Map(nodes.map((n) => [n.id, n.depends_on]));
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const visit = (id: string): string[] | undefined => {
    const s = state.get(id);
    if (s === 'done') return undefined;
    if (s === 'visiting') return [...stack.slice(stack.indexOf(id)), id];
    state.set(id, 'visiting');
    stack.push(id);
    for (const dep of deps.get(id) ?? []) {
      const found = visit(dep);
      if (found) return found;
    }
    stack.pop();
    state.set(id, 'done');
    return undefined;
  };
  for (const n of nodes) {
    const found = visit(n.id);
    if (found) return found;
  }
  return undefined;
}

/** Every node `id` depends on, directly or transitively. */
export function ancestorsOf(nodes: readonly GraphNode[], id: string): Set<string> {
  const deps = new Map(nodes.map((n) => [n.id, n.depends_on]));
  const seen = new Set<string>();
  const queue = [...(deps.get(id) ?? [])];
  while (queue.length) {
    const next = queue.pop()!;
    if (seen.has(next)) continue;
    seen.add(next);
    queue.push(...(deps.get(next) ?? []));
  }
  return seen;
}

export type DefinitionParse = { ok: true; definition: WorkflowDefinition } | { ok: false; error: string };

/**
 * Validates an untrusted definition (parsed YAML/JSON or a rib's object). The error lists every
 * problem as `<root>.<path>: <reason>`, e.g. `definition.nodes.2.depends_on.0: unknown node "bulid" (known: lint, test)`.
 */
export function parseWorkflowDefinition(raw: unknown, root = 'definition'): DefinitionParse {
  const result = workflowDefinitionSchema.safeParse(raw);
  if (result.success) return { ok: true, definition: result.data };
  return { ok: false, error: describeZodError(result.error, root) };
}

/** What the `dagRun` workflow knows of a node: its shape, never its body (bodies stay in Postgres). */
export interface PlanNode {
  id: string;
  type: WorkflowNodeType;
  dependsOn: string[];
  timeoutMs: number;
  retries: number;
  when?: NodeCondition;
  /** Approval nodes only. */
  onFeedback?: 'fail' | 'continue';
}

/** The executable skeleton of a definition, in definition order. */
export function planOf(def: WorkflowDefinition): PlanNode[] {
  return def.nodes.map((n) => ({
    id: n.id,
    type: n.type,
    dependsOn: [...n.depends_on],
    timeoutMs: n.timeout ?? def.timeout ?? workflowLimits.defaultTimeoutMs,
    retries: n.retries ?? 0,
    ...(n.when ? { when: n.when } : {}),
    ...(n.type === 'approval' ? { onFeedback: n.on_feedback } : {}),
  }));
}

/** How many characters of a node's trimmed output a `when` condition sees. */
export const WHEN_VALUE_CHARS = 1024;

/** Whether a `when` condition holds for the value of the node it names (pure; the workflow evaluates it). */
export function conditionHolds(when: NodeCondition, value: string | undefined): boolean {
  const v = (value ?? '').trim();
  if (when.equals !== undefined) return v === when.equals.trim();
  if (when.notEquals !== undefined) return v !== when.notEquals.trim();
  return new RegExp(when.matches ?? '').test(v);
}

/** An approval answer approves when, trimmed and lower-cased, it is `approve` or `approved`; anything else is feedback. */
export function isApproval(text: string): boolean {
  const t = text.trim().toLowerCase();
  return t === 'approve' || t === 'approved';
}
