import type { Rib, RibActionResult, RibContext } from '@keelson/ribs-contract';
import { SWARM_BOARD_KEY, renderBoard } from './board';
import { swarmDocs } from './docs';
import { operatorApi } from './operator/operatorApi';
import { agentTools } from './tools/agentTools';
import { operatorTools } from './tools/operatorTools';

export const SWARM_RIB_ID = 'swarm';

/**
 * The swarm rib (seed 001): the operator's tools, the agents' tools (granted only inside a swarm
 * turn, to the agent the turn context names), a board of live swarms, and the operating contract as
 * an inline `keelson_docs` corpus. The engine itself is the `swarm` workflow; the rib runs nothing at
 * activation.
 */
const rib: Rib = {
  id: SWARM_RIB_ID,
  displayName: 'Swarm',
  registerTools: (ctx: RibContext) => [...operatorTools((caller) => operatorApi(caller), ctx), ...agentTools()],
  async composeBundle() {
    try {
      return renderBoard(await operatorApi().live());
    } catch (err) {
      return renderBoard({ error: (err as Error).message });
    }
  },
  views: [{ key: SWARM_BOARD_KEY, canvasKind: 'markdown', title: 'Swarms' }],
  surfaces: [
    {
      id: 'swarm',
      title: 'Swarms',
      heading: 'Swarms',
      subtitle: 'Agents working together on ClickClack',
      layout: { rows: [{ columns: [{ key: SWARM_BOARD_KEY, title: 'Live swarms', live: true, headActions: [{ label: 'Refresh', action: 'refresh' }] }] }] },
    },
  ],
  async onAction(action, ctx): Promise<RibActionResult> {
    if (action.type !== 'refresh') return { ok: false, error: `unknown action '${action.type}'` };
    await ctx.getSnapshotManager?.().recompose(SWARM_RIB_ID);
    return { ok: true };
  },
  contributeDocs: () => swarmDocs,
};

export default rib;

// What the agent tools ask of a running turn (the swarms domain's engine implements it).
export { BusFailure, bindTurn, turnOf, TURN_CONTEXT_KEY } from './tools/agentTurn';
export type { AgentTurn, BusMessage, BusUser, RosterLine, SwarmCommand } from './tools/agentTurn';
export { agentTools, renderMessage, AGENT_TOOL_NAMES, LEAD_TOOL_NAMES, MERGE_TOOL_NAME, AGENT_POST_CHARS, CONCLUSION_CHARS } from './tools/agentTools';

// The operator side: the tools' service API and the docs.
export { operatorTools, OPERATOR_TOOL_NAMES, describeSwarm, WAIT_MAX_S } from './tools/operatorTools';
export { graphqlSwarmApi, configureSwarmOperator, operatorApi } from './operator/operatorApi';
export type { SwarmOperatorFactory } from './operator/operatorApi';
export type { SwarmOperatorApi, SwarmSummary, ServerSummary, TranscriptMessage } from './operator/operatorApi';
export { SWARM_DOCS, swarmDocs } from './docs';
export { SWARM_BOARD_KEY, renderBoard } from './board';
