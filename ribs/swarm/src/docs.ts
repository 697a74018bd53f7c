import { swarmInputBounds, swarmLimitBounds, swarmTuning, type SwarmLimitName } from '@keelson/schema';
import type { RibDocsSource } from '@keelson/ribs-contract';
import { AGENT_POST_CHARS, AGENT_TOOL_NAMES, CONCLUSION_CHARS, CONTEXT_PAGE_CHARS, LEAD_TOOL_NAMES, MERGE_TOOL_NAME } from './tools/agentTools';
import { OPERATOR_TOOL_NAMES, WAIT_MAX_S } from './tools/operatorTools';

const limitLine = (name: SwarmLimitName, what: string) => {
  const b = swarmLimitBounds[name];
  return `- \`${name}\`: ${b.min}–${b.max}, default ${b.default} — ${what}`;
};

/**
 * The swarm's operating contract, shipped inside the package as an inline `keelson_docs` corpus (seed
 * 001 "The operating contract ships inside the package"). Its numbers come from the same constants the
 * schemas enforce, and a test checks the text against the registered tools and those schemas.
 */
export const SWARM_DOCS = [
  '# What a swarm is',
  'Several agents working on one task together in a ClickClack channel. The lead plans and routes the work by @mentioning agents; workers answer in threads; the lead concludes with `chat_report`. Each agent is a bot identity on the bus (ClickClack stamps the author of every post), an inbox of message ids, and a provider session resumed turn after turn. A swarm is one durable op: its op id exists at once, its progress lines are the op\'s frames, `run_cancel`/`cancelOp` stops it and `run_steer`/`steerOp` posts a note as the operator.',
  '# Starting a swarm',
  'Call `chat_swarm_start` (GraphQL `startSwarm`) with:',
  `- \`task\`: 1–${swarmInputBounds.taskChars} characters.`,
  `- \`evidence\`: at most ${swarmInputBounds.evidenceItems} items, ${swarmInputBounds.evidenceChars} characters together; each \`{ title, sourceUrl?, body }\`. A title is one line of at most ${swarmInputBounds.titleChars} characters; a source URL is http or https. Evidence is stored verbatim: the swarm never fetches anything.`,
  `- \`agents\`: at most ${swarmInputBounds.initialAgents} workers \`{ name, role }\` that join with the lead (a name is 1–${swarmInputBounds.agentNameChars} characters of a-z, 0-9 and "-").`,
  '- `projectId`, `workTools: READ` (agents may Read, Glob and Grep the project), `writeMode` (the lead chooses writers).',
  '- `size`: SMALL, MEDIUM or LARGE presets the agent and turn limits; explicit `limits` win.',
  'A start without a bus (no binary and no URL) fails SERVICE_UNAVAILABLE with the reason, and creates nothing. Bad input fails BAD_USER_INPUT saying how much to cut.',
  '# Limits',
  limitLine('maxAgents', 'agents, the lead included'),
  limitLine('maxTurns', 'turns of the whole swarm; when they run out it ends EXHAUSTED'),
  limitLine('maxTurnsPerAgent', 'turns of one agent; it is then CAPPED (the lead capped ends the swarm EXHAUSTED)'),
  limitLine('turnTimeoutS', 'one turn, in seconds'),
  limitLine('maxMinutes', 'wall clock, in minutes; then EXHAUSTED'),
  `${swarmTuning.maxFailures} failed turns in a row retire an agent (FAILED); the lead's end the swarm ERROR. After ${swarmTuning.quiescenceMs} ms with nothing running the swarm concludes (DONE, once the lead reported), or nudges the lead (${swarmTuning.maxNudges} times), then ends STALLED.`,
  '# Routing',
  'Who wakes for a message (a pure function, the same every time):',
  '- an @handle mention wakes that agent, on top of every rule below;',
  '- a reply by the agent that started the thread wakes every agent in the thread;',
  '- a reply by any other agent wakes the thread\'s starter;',
  '- a reply by a human, or in a thread a human started, wakes every agent in the thread;',
  '- a human\'s unaddressed top-level post (the kickoff, the operator\'s steer) wakes the lead;',
  '- an agent\'s unaddressed top-level post wakes nobody;',
  '- the swarm\'s own notices wake nobody. The author never wakes itself.',
  '# Agent tools',
  `Agents get exactly these (the calling agent is always the one the turn context names; no input can name another): ${AGENT_TOOL_NAMES.map((t) => `\`${t}\``).join(', ')}; the lead also \`${LEAD_TOOL_NAMES[0]}\`, and in write mode without an origin remote \`${MERGE_TOOL_NAME}\`.`,
  `- \`chat_post\`: a top-level message (at most ${AGENT_POST_CHARS} characters); \`chat_reply\`: a reply in a thread (to its root).`,
  '- `chat_read`: the channel or one thread. `chat_roster`: who is in the swarm.',
  `- \`chat_context\`: the evidence list, or one item ${CONTEXT_PAGE_CHARS} characters at a time.`,
  '- `chat_spawn`: ask for another agent (the lead may make it a writer in write mode), within maxAgents.',
  '- `chat_done`: a worker declares its part finished. ',
  `- \`chat_report\`: the lead's conclusion (at most ${CONCLUSION_CHARS} characters); the swarm ends DONE once nothing else runs.`,
  `- \`${MERGE_TOOL_NAME}\`: the lead lands a writer's reviewed commit on the root's branch.`,
  '# Operator tools',
  `The operator (a chat agent or a workflow) has ${OPERATOR_TOOL_NAMES.map((t) => `\`${t}\``).join(', ')}. Swarm agents never get them.`,
  `- \`chat_swarm_wait\` waits at most ${WAIT_MAX_S} seconds per call.`,
  '- `chat_server_reset` resets the managed server only with `confirm: true`; without it, it says what a reset would delete.',
  '# The bus',
  'ClickClack is the bus, reached only over its HTTP and WebSocket API. With nothing configured the mesh runs `clickclack serve` itself (CLICKCLACK_BIN, else `clickclack` on PATH) on 127.0.0.1:CLICKCLACK_PORT (18080) without --dev-bootstrap (the mesh bootstraps an owner with ClickClack\'s admin bootstrap and signs in through admin magic-link create; anonymous requests get 401), in its own process group, its data under <KEELSON_HOME>/rib-swarm/clickclack; it proves ownership by the command line carrying that data directory and adopts a server a crashed process left running. A URL or a token (CLICKCLACK_URL, CLICKCLACK_TOKEN) means somebody else runs it: chat_server_start, chat_server_stop and chat_server_reset refuse. Watch and speak in ClickClack\'s own UI at the channel\'s webUrl.',
  '# Tokens and crashes',
  'Each agent posts with its own bot token, held in worker memory only (never in workflow history, events or logs). A worker that lost one mints a new one and revokes the old; at the end every token the swarm ever held is revoked, after a crash too. A turn runs once per turn id <swarmId>:<agentId>:<turnNo>; posts carry deterministic nonces, so a retried turn duplicates nothing in the channel.',
  '# Write mode',
  'The lead chooses writers (`chat_spawn` with writer: true); each gets a worktree lease and a branch of its own through the projects domain, so no two agents edit one checkout and the others keep the read-only file tools. A writer has Read, Write, Edit, Glob, Grep and Bash in its worktree; Bash runs in the mesh\'s sandbox, writable only there, with git metadata read-only, so the engine commits each writer turn\'s changes as the writer and tells the lead the SHA. Without an origin remote, writers are cut from the tip of the root\'s HEAD branch (captured once; later writers inherit local merges) and the lead lands a reviewed SHA with `chat_merge` under the project\'s mutation lock: the root must be clean and on that branch, the SHA must be the writer\'s branch head, and no incoming commit may carry AI attribution; a conflict aborts and changes nothing, and the writer repairs it for another review. With an origin remote, writers are cut from the fetched remote default branch and their commits stay on their branches; when the swarm ends DONE and the operator opted the project in (KEELSON_SWARM_PUBLISH_PROJECTS), each kept branch is checked for AI attribution, pushed to origin and offered as a draft pull request through the operator\'s command (KEELSON_SWARM_PR_COMMAND, which must ask for --draft). Nothing ever merges a pull request. At the end worktrees are released; a branch is deleted only once the base holds its commits. The op\'s result says what was published, or why nothing was.',
].join('\n\n');

export const swarmDocs: RibDocsSource[] = [
  {
    title: 'Swarm',
    summary: 'Agents working together on ClickClack: starting a swarm, limits, routing, the agent and operator tools, the bus, tokens, write mode.',
    content: SWARM_DOCS,
  },
];
