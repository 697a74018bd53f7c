// The domain: opened over an executor, its services for the GraphQL face.
export { openSwarmsDomain } from './domain';
export type { OpenSwarmsDomainOptions, OpenedSwarmsDomain, SwarmsServices } from './domain';
export type { SwarmsExecutor, SwarmLaunchRequest, SwarmPlan } from './executor';
export type { SwarmsSettings } from './settings';
export { SwarmService } from './service/swarm.service';
export type { MessageView, SwarmServiceDeps } from './service/swarm.service';
export { ServerService } from './service/server.service';
export type { ServerView } from './service/server.service';
export { launchSwarm } from './service/launch';
export type { LaunchSwarmDeps, LaunchSwarmArgs, LaunchedSwarm } from './service/launch';

// The swarm tables: the store (their only writer) and the migrations.
export { SwarmStore } from './store/swarmStore';
export type { NewSwarm, SwarmRecord, SwarmStateUpdate, TurnRecord, TurnClaim } from './store/swarmStore';
export { swarmMigrations, SWARM_MIGRATIONS_TABLE, SwarmTables1764460800600 } from './store/migrations';

// The bus: ClickClack's client and the server the mesh may run itself.
export { ClickClackClient, ClickClackError } from './bus/clickclack';
export type { ClickClackClientOptions, MintedToken, BusMessagePage, BusSubscription } from './bus/clickclack';
export type { BusEvent } from './bus/wire';
export { resolveBusSetup, whichClickclack, DEFAULT_CLICKCLACK_PORT, NO_BINARY_REASON } from './bus/busSetup';
export type { BusSetup } from './bus/busSetup';
export { ManagedBus, MANAGED_OWNER, childEnv } from './bus/managedBus';
export type { ManagedBusOptions, ManagedBusStatus, BusProcessRecord, BusOwnerRecord } from './bus/managedBus';

// The engine: what the swarm workflow's activities run in a worker.
export { TokenVault, processVault } from './engine/tokenVault';
export type { HeldToken } from './engine/tokenVault';
export { BusAccess } from './engine/busAccess';
export { TurnSession } from './engine/turnSession';
export type { TurnSessionOptions } from './engine/turnSession';
export { systemPrompt, turnPrompt, kickoffText } from './engine/prompt';
export type { BackgroundPreview, SystemPromptInput, TurnPromptInput } from './engine/prompt';

// Write mode: writers' worktrees and the lead's chat_merge.
export { detectWriteBase, cutWriterWorktree, commitWriterTurn, pruneWriterBranch } from './write/writeBase';
export type { WriteBase } from './write/writeBase';
export { landReviewedSha, MergeRefused } from './write/merge';
export type { LandInput } from './write/merge';
export { aiAttributionIn } from './write/attribution';
export { publishWriterBranch } from './write/publish';
export type { PublishSettings, PublishedBranch } from './write/publish';
export { git, GitFailure, isLocalRemote } from './write/git';
