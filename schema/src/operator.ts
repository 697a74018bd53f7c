/**
 * The operator plane's names (CONTRACT.md "The operator plane"): the one approval inbox and the
 * capability changes. Pure: the store lives in @keelson/operator, the GraphQL in the sessions subgraph.
 */

/** Where an approval comes from. */
export const approvalKinds = ['RUN_GATE', 'POLICY_ASK', 'HARNESS_TOOL', 'SWARM_GATE'] as const;
export type ApprovalKind = (typeof approvalKinds)[number];

/** An approval's lifecycle: OPEN until answered, expired (its asker stopped waiting) or cancelled (its work ended). */
export const approvalStatuses = ['OPEN', 'ANSWERED', 'EXPIRED', 'CANCELLED'] as const;
export type ApprovalStatus = (typeof approvalStatuses)[number];

/** Event types of the `approvals` stream, one per transition of an approval row. */
export const approvalEventTypes = ['APPROVAL_OPENED', 'APPROVAL_ANSWERED', 'APPROVAL_EXPIRED', 'APPROVAL_CANCELLED'] as const;
export type ApprovalEventType = (typeof approvalEventTypes)[number];

/** Payload of an `approvals` event: ids and small facts only (the question is read from the row). */
export interface ApprovalEventPayload {
  approvalId: string;
  kind: ApprovalKind;
  status: ApprovalStatus;
  runId?: string | null;
  sessionId?: string | null;
  swarmId?: string | null;
  projectId?: string | null;
}

/** What a capability change is about. */
export const capabilitySources = ['HARNESS', 'RIB', 'SWARM_BUS', 'MEMORY_SEARCH'] as const;
export type CapabilitySource = (typeof capabilitySources)[number];

/** The one event type of the `capabilities` stream. */
export const CAPABILITY_CHANGED = 'CAPABILITY_CHANGED';

/**
 * Payload of a `capabilities` event (key `<source>:<id>`): the state now and the state before
 * (null the first time the mesh observed it). `available` is the read field's answer (installed,
 * activated, running, hybrid search); `state` the small facts behind it.
 */
export interface CapabilityChangePayload {
  source: CapabilitySource;
  id: string;
  available: boolean;
  previous: boolean | null;
  state: Record<string, string | number | boolean | null>;
  reason: string | null;
}
