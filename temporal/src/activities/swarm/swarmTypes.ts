import type { PublishSettings } from '@keelson/swarms';
import type { RosterLine, SwarmCommand } from '@keelson/rib-swarm';
import type { BackgroundPreview, BusAccess, SwarmStore, TokenVault, WriteBase } from '@keelson/swarms';
import type { AgentTurnRequest } from '@keelson/providers';
import type { OpStore, ProjectsApi } from '@keelson/runs';
import type { Logger } from '@keelson/service';
import type { RibAgentTurn } from '@keelson/ribs-contract';

// The swarm activities' inputs, results and dependencies (the swarm workflow imports these types only).

/** What the swarm activities reach the world through. */
export interface SwarmActivityDeps {
  store: SwarmStore;
  ops: OpStore;
  /** The bus as this worker reaches it (its own env: CLICKCLACK_*, KEELSON_HOME). */
  bus: BusAccess;
  /** Agent turns through the provider registry, with the worker's rib host (the agent tools). */
  turns?: { run(req: AgentTurnRequest): RibAgentTurn; ready(): Promise<unknown> };
  /** @default the process's vault */
  vault?: TokenVault;
  /** Write mode: writers' worktree leases and the root's mutation lock, through the projects subgraph. */
  projects?: ProjectsApi;
  /** The environment git runs with in write mode (identity, GIT_CONFIG_GLOBAL). @default process.env */
  gitEnv?: Record<string, string | undefined>;
  /** Write mode with origin: which projects push their writers' branches, and the draft pull request command. @default none */
  publish?: PublishSettings;
  log?: Logger;
  /** A turn's lease, renewed while it runs: a lost worker's turn is taken over after it lapses. @default 15000 */
  turnLeaseMs?: number;
}

/** The channel the swarm's boot created (or found, on a retry). */
export interface SwarmBootResult {
  busUrl: string;
  workspaceId: string;
  channelId: string;
  channelName: string;
  webUrl: string;
  /** The newest durable cursor before the channel existed; the tail starts after it. */
  tailCursor?: string;
}

/** A message as routing needs it: never its body (a one-line preview at most). */
export interface HydratedMessage {
  id: string;
  channelId: string | null;
  authorId: string;
  authorKind: 'human' | 'bot';
  authorHandle: string | null;
  threadRootId: string;
  mentions: string[];
  preview: string;
  /** The message no longer exists (deleted): nothing to route. */
  missing?: boolean;
}

export interface SwarmTurnInput {
  swarmId: string;
  agentId: string;
  turnNo: number;
  /** The swarm workflow's id: where posts are announced. */
  workflowId: string;
  workspaceId: string;
  channelId: string;
  channelName: string;
  botId: string;
  /** Every token id the workflow recorded for the agent, oldest first. */
  tokenIds: string[];
  messageIds: string[];
  background: BackgroundPreview[];
  notes: string[];
  /** The provider session the agent's turns resume. */
  sessionId?: string;
  handle: string;
  role: string;
  lead: boolean;
  writer: boolean;
  writeMode: boolean;
  roster: RosterLine[];
  swarmTurnsLeft: number;
  agentTurnsLeft: number;
  turnTimeoutMs: number;
  provider?: string;
  model?: string;
  /** The turn's working directory (a project, or a writer's worktree); absent: a neutral directory. */
  cwd?: string;
  /** Offer Read/Glob/Grep (and Write/Edit/Bash to a writer) confined to `cwd`. */
  workTools: boolean;
  /** Write mode: the project, its write base, this writer's worktree, and (for the lead) every writer's branch. */
  write?: SwarmWriteContext;
}

/** What a turn in write mode knows. */
export interface SwarmWriteContext {
  projectId: string;
  root: string;
  base: WriteBase;
  /** This agent's worktree, when it is a writer. */
  worktree?: WriterLease;
  /** Every writer's branch by agent id (the lead's chat_merge lands their reviewed SHAs). */
  writers: Record<string, string>;
  /** The lead's handle (a writer's commit notice addresses it). */
  leadHandle: string;
}

/** A writer's worktree lease. */
export interface WriterLease {
  leaseId: string;
  path: string;
  branch: string;
}

/** A writer's commit after a turn (the engine commits: the agent cannot write git metadata). */
export interface WriterCommit {
  sha: string;
  branch: string;
  files: number;
}

export interface SwarmTurnResult {
  status: 'ok' | 'timeout' | 'error' | 'interrupted';
  error?: string;
  sessionId?: string;
  model?: string;
  /** A token minted by this turn (the previous one was lost with its worker); the workflow records it. */
  newTokenId?: string;
  usage?: { inputTokens: number; outputTokens: number };
  toolCalls: number;
  durationMs: number;
  /** Messages the turn wrote (also announced one by one while it ran). */
  posted: string[];
  commands: SwarmCommand[];
  /** Write mode: what the lead's chat_merge landed or was refused. */
  merges?: { agent: string; sha: string; result: string; landed: boolean }[];
  /** Write mode: the writer's commit of this turn's changes. */
  commit?: WriterCommit;
}
