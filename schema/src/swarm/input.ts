import { z } from 'zod';

/** Inclusive bounds and defaults of a swarm's limits (`StartSwarmInput.limits`, `chat_swarm_start`). */
export const swarmLimitBounds = {
  maxAgents: { min: 1, max: 12, default: 4 },
  maxTurns: { min: 1, max: 200, default: 40 },
  maxTurnsPerAgent: { min: 1, max: 100, default: 12 },
  turnTimeoutS: { min: 30, max: 1800, default: 600 },
  maxMinutes: { min: 1, max: 240, default: 30 },
} as const;
export type SwarmLimitName = keyof typeof swarmLimitBounds;
export type SwarmLimits = Record<SwarmLimitName, number>;

/** Presets `size` picks before explicit limits apply. */
export const swarmSizes = {
  SMALL: { maxAgents: 3, maxTurns: 20 },
  MEDIUM: { maxAgents: 5, maxTurns: 40 },
  LARGE: { maxAgents: 8, maxTurns: 80 },
} as const;
export type SwarmSize = keyof typeof swarmSizes;

/** Bounds of the launch input (seed 001 "Evidence is supplied, never fetched"). */
export const swarmInputBounds = {
  taskChars: 8000,
  evidenceItems: 20,
  /** Evidence bodies and titles together. */
  evidenceChars: 300_000,
  titleChars: 200,
  sourceUrlChars: 2048,
  agentNameChars: 20,
  roleChars: 500,
  initialAgents: 11,
} as const;

/** An agent's name: its handle is `<swarm handle prefix>-<name>`. */
export const agentNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,19}$/, 'an agent name is 1 to 20 characters of a-z, 0-9 and "-", starting with a letter');

const fmt = (n: number) => n.toLocaleString('en-US');

/** "<what> is N characters; at most M are allowed: cut K" (how much to cut, as the upstream docs say). */
export function tooLong(what: string, length: number, max: number): string {
  return `${what} is ${fmt(length)} characters; at most ${fmt(max)} are allowed: cut ${fmt(length - max)}`;
}

const limitField = (name: SwarmLimitName) => {
  const b = swarmLimitBounds[name];
  return z
    .number()
    .int(`${name} must be a whole number`)
    .min(b.min, `${name} must be between ${b.min} and ${b.max}`)
    .max(b.max, `${name} must be between ${b.min} and ${b.max}`)
    .optional();
};

export const evidenceItemSchema = z.object({
  title: z
    .string()
    .min(1, 'a title is required')
    .refine((t) => !/[\r\n\u2028\u2029]/.test(t), 'a title is one line: remove its line breaks')
    .superRefine((t, ctx) => {
      if (t.length > swarmInputBounds.titleChars) ctx.addIssue({ code: 'custom', message: tooLong('the title', t.length, swarmInputBounds.titleChars) });
    }),
  sourceUrl: z
    .string()
    .max(swarmInputBounds.sourceUrlChars, `a source URL is at most ${swarmInputBounds.sourceUrlChars} characters`)
    .refine((u) => {
      try {
        const p = new URL(u).protocol;
        return p === 'http:' || p === 'https:';
      } catch {
        return false;
      }
    }, 'a source URL must be an http or https URL')
    .nullish(),
  body: z.string().min(1, 'an evidence body is required (evidence is stored verbatim)'),
});
export type EvidenceItem = z.infer<typeof evidenceItemSchema>;

/**
 * What starting a swarm takes (`startSwarm`'s `StartSwarmInput`, `chat_swarm_start`'s input): the
 * task, evidence stored verbatim (titles one line, source URLs http/https), limits within their
 * bounds, an optional project (`workTools: READ` gives agents read-only file tools there;
 * `writeMode` lets the lead choose writers, each with a worktree of its own), and an optional first
 * roster of workers beside the lead.
 */
export const startSwarmInputSchema = z
  .object({
    task: z
      .string()
      .refine((t) => t.trim() !== '', 'the task is required')
      .superRefine((t, ctx) => {
        if (t.length > swarmInputBounds.taskChars) ctx.addIssue({ code: 'custom', message: tooLong('the task', t.length, swarmInputBounds.taskChars) });
      }),
    projectId: z.string().uuid('expected a project id').nullish(),
    evidence: z.array(evidenceItemSchema).max(swarmInputBounds.evidenceItems, `at most ${swarmInputBounds.evidenceItems} evidence items`).default([]),
    size: z.enum(['SMALL', 'MEDIUM', 'LARGE']).nullish(),
    limits: z
      .object({
        maxAgents: limitField('maxAgents'),
        maxTurns: limitField('maxTurns'),
        maxTurnsPerAgent: limitField('maxTurnsPerAgent'),
        turnTimeoutS: limitField('turnTimeoutS'),
        maxMinutes: limitField('maxMinutes'),
      })
      .nullish(),
    workTools: z.enum(['NONE', 'READ']).nullish(),
    writeMode: z.boolean().nullish(),
    agents: z
      .array(z.object({ name: agentNameSchema.refine((n) => n !== 'lead', '"lead" is the lead\'s name'), role: z.string().min(1).max(swarmInputBounds.roleChars) }))
      .max(swarmInputBounds.initialAgents)
      .nullish(),
    provider: z.string().min(1).max(64).nullish(),
    model: z.string().min(1).max(200).nullish(),
    workerModel: z.string().min(1).max(200).nullish(),
  })
  .superRefine((input, ctx) => {
    const total = input.evidence.reduce((n, e) => n + e.body.length + e.title.length, 0);
    if (total > swarmInputBounds.evidenceChars) {
      ctx.addIssue({ code: 'custom', path: ['evidence'], message: tooLong('the evidence (titles and bodies together)', total, swarmInputBounds.evidenceChars) });
    }
    const names = (input.agents ?? []).map((a) => a.name);
    const dup = names.find((n, i) => names.indexOf(n) !== i);
    if (dup) ctx.addIssue({ code: 'custom', path: ['agents'], message: `agent "${dup}" is named twice` });
    const maxAgents = input.limits?.maxAgents;
    if (maxAgents != null && maxAgents < 1 + names.length) {
      ctx.addIssue({ code: 'custom', path: ['limits', 'maxAgents'], message: `maxAgents is ${maxAgents}, but the lead and ${names.length} named agent(s) need ${1 + names.length}` });
    }
    if ((input.writeMode || input.workTools === 'READ') && !input.projectId) {
      ctx.addIssue({ code: 'custom', path: ['projectId'], message: `${input.writeMode ? 'writeMode' : 'workTools READ'} needs a projectId` });
    }
  });
export type StartSwarmInput = z.input<typeof startSwarmInputSchema>;
export type ParsedStartSwarmInput = z.output<typeof startSwarmInputSchema>;

/** The limits a parsed input resolves to: defaults, then the size preset, then explicit limits. */
export function resolveSwarmLimits(input: Pick<ParsedStartSwarmInput, 'size' | 'limits' | 'agents'>): SwarmLimits {
  const limits = Object.fromEntries(Object.entries(swarmLimitBounds).map(([k, b]) => [k, b.default])) as SwarmLimits;
  if (input.size) Object.assign(limits, swarmSizes[input.size]);
  for (const [k, v] of Object.entries(input.limits ?? {})) if (typeof v === 'number') limits[k as SwarmLimitName] = v;
  // A default or preset never leaves fewer slots than the lead and the named workers need.
  if (input.limits?.maxAgents == null) limits.maxAgents = Math.min(swarmLimitBounds.maxAgents.max, Math.max(limits.maxAgents, 1 + (input.agents?.length ?? 0)));
  return limits;
}

/**
 * What a swarm's workflow starts from: the swarm as the swarms domain registered it (no secrets;
 * evidence bodies stay in the store). The `swarm` workflow's input is this plus the state a
 * continue-as-new carries (`SwarmWorkflowInput`).
 */
export interface SwarmPlan {
  swarmId: string;
  opId: string;
  limits: SwarmLimits;
  /** The lead's role line. */
  leadRole: string;
  /** Workers that join with the lead. */
  agents: { name: string; role: string }[];
  writeMode: boolean;
  /** Agents may read the project (Read/Glob/Grep, confined to `projectRoot`). */
  workTools: boolean;
  /** The project (write mode leases writers' worktrees in it). */
  projectId?: string;
  projectRoot?: string;
  provider?: string;
  /** The lead's model (and workers' unless `workerModel`). */
  model?: string;
  workerModel?: string;
  /** The kickoff post: the task and the evidence titles (the bodies stay in the store). */
  kickoff: string;
  /** Heartbeat timeout of the tail and turn activities: a lost worker is noticed within it. */
  heartbeatTimeoutMs: number;
  /** Tests: continue as new past this many history events (otherwise when Temporal suggests it). */
  continueAsNewAfterEvents?: number;
}
