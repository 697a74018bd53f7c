import { ApplicationFailure } from '@temporalio/common';
import { BusFailure, type BusMessage } from '@keelson/rib-swarm';
import { ClickClackError, landReviewedSha, processVault, type ClickClackClient, type HeldToken } from '@keelson/swarms';
import { type SwarmEventRecord } from '@keelson/schema';
import type { SwarmActivityDeps, SwarmTurnInput, SwarmWriteContext } from './swarmTypes';

/** The nonce a turn mints its agent's replacement token under: a retried attempt gets the same token id back. */
export function tokenNonce(swarmId: string, agentId: string, generation: number, turnNo: number): string {
  return `${swarmId}:${agentId}:tok${generation}:${turnNo}`;
}

export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });

/** A bus call's failure as the activity reports it: a rejected credential is final, anything else retried. */
export function busFailure(err: unknown, what: string): never {
  if (err instanceof ClickClackError && err.credentialRevoked) {
    throw ApplicationFailure.create({ type: 'UPSTREAM_FAILED', message: `ClickClack credential revoked (${what}): ${err.message}`, nonRetryable: true });
  }
  throw err;
}

/** What every swarm activity shares: the deps (or a SERVICE_UNAVAILABLE failure), the bus as owner, recovery, git, merges, tokens. */
export function swarmContext(deps: SwarmActivityDeps | undefined) {
  const need = (): SwarmActivityDeps => {
    if (!deps) throw ApplicationFailure.nonRetryable('this worker was started without the swarm domain (ActivityDeps.swarm)', 'SERVICE_UNAVAILABLE');
    return deps;
  };
  const vault = () => need().vault ?? processVault;

  /** The owner's client; in managed mode the server is started or adopted first when it does not answer. */
  const owner = async (): Promise<ClickClackClient> => {
    const { bus } = need();
    try {
      return await bus.ownerClient();
    } catch (err) {
      if (err instanceof ClickClackError && err.unreachable && bus.managed) {
        await bus.ensure();
        return bus.ownerClient();
      }
      throw err;
    }
  };

  /** After a bus failure in managed mode, the server is brought back (same data directory) before the retry. */
  const recover = async (err: unknown): Promise<void> => {
    const { bus } = need();
    if (bus.managed && ((err instanceof ClickClackError && err.unreachable) || (err instanceof BusFailure && !err.revoked))) {
      await bus.ensure().catch((e: unknown) => need().log?.warn({ err: e }, 'the managed ClickClack could not be brought back'));
    }
    if (err instanceof ClickClackError && err.credentialRevoked) bus.invalidateOwner();
  };

  const gitEnv = () => need().gitEnv ?? process.env;

  /** chat_merge: under the project's mutation lock, lands the reviewed SHA of a writer's branch. */
  const landFor = async (input: SwarmTurnInput, write: SwarmWriteContext, m: { agent: string; sha: string }): Promise<string> => {
    const branch = write.writers[m.agent];
    if (!branch) throw new Error(`${m.agent} is not a writer of this swarm (writers: ${Object.keys(write.writers).join(', ') || 'none'})`);
    const projects = need().projects;
    if (!projects?.acquireMutationLock || !projects.releaseMutationLock) throw new Error('no mutation lock is available on this worker: refusing to change the project unguarded');
    const lock = await projects.acquireMutationLock(write.projectId, `swarm ${input.swarmId.slice(0, 8)}: merge ${m.agent}'s ${m.sha.slice(0, 12)}`, `swarm:${input.swarmId}`);
    try {
      return await landReviewedSha({ root: write.root, base: write.base.branch, branch, sha: m.sha, agent: m.agent, env: gitEnv() });
    } finally {
      await projects.releaseMutationLock(lock.id).catch(() => undefined);
    }
  };

  const hydrateWith = async (client: ClickClackClient, ids: readonly string[]): Promise<(BusMessage | undefined)[]> =>
    Promise.all(
      ids.map((id) =>
        client.getMessage(id).catch((err: unknown) => {
          if (err instanceof ClickClackError && err.status === 404) return undefined;
          throw err;
        }),
      ),
    );

  /**
   * The agent's token for this turn: the vault's when it is the newest recorded (or one this worker
   * minted and the workflow has not recorded yet); otherwise a new one under the turn's nonce, the
   * old one revoked.
   */
  async function agentToken(input: SwarmTurnInput): Promise<{ held: HeldToken; newTokenId?: string }> {
    const latest = input.tokenIds.at(-1);
    const held = vault().get(input.swarmId, input.agentId);
    if (held && held.tokenId === latest) return { held };
    if (held && !input.tokenIds.includes(held.tokenId)) return { held, newTokenId: held.tokenId };
    try {
      const client = await owner();
      const minted = await client.createBotToken(input.workspaceId, input.botId, {
        name: 'keelson-swarm',
        scopes: ['bot:write'],
        setupNonce: tokenNonce(input.swarmId, input.agentId, input.tokenIds.length, input.turnNo),
      });
      if (latest && latest !== minted.id) {
        await client.revokeBotToken(latest).catch((err: unknown) => {
          if (!(err instanceof ClickClackError && err.status === 404)) throw err;
        });
      }
      const fresh = { tokenId: minted.id, token: minted.token };
      vault().put(input.swarmId, input.agentId, fresh);
      return { held: fresh, newTokenId: minted.id };
    } catch (err) {
      await recover(err);
      return busFailure(err, 'minting an agent token');
    }
  }

  return { deps, need, vault, owner, recover, gitEnv, landFor, hydrateWith, agentToken };
}

export type SwarmContext = ReturnType<typeof swarmContext>;

/** The op's log line for a swarm event (the generic run tooling follows swarms through `opFrames`). */
export function opLine(e: SwarmEventRecord): string | undefined {
  const p = e.payload;
  switch (e.type) {
    case 'SWARM_STARTED':
      return 'swarm started';
    case 'AGENT_JOINED':
      return `agent ${p.agentId} joined as @${p.handle}${p.lead ? ' (lead)' : ''}${p.writer ? ' (writer)' : ''}`;
    case 'TURN_STARTED':
      return `turn ${p.turnNo} of ${p.agentId} started (${p.messageIds?.length ?? 0} message(s))`;
    case 'TURN_ENDED':
      return `turn ${p.turnNo} of ${p.agentId} ended: ${p.status}${p.reason ? ` (${p.reason})` : ''}`;
    case 'AGENT_RETIRED':
      return `agent ${p.agentId} retired: ${p.reason}`;
    case 'SWARM_NUDGED':
      return `the swarm was quiet: nudged the lead (${p.nudge})`;
    case 'SWARM_CONCLUDED':
      return 'the lead reported a conclusion';
    case 'SWARM_ENDED':
      return `swarm ended ${p.status}${p.reason ? `: ${p.reason}` : ''}`;
    default:
      return undefined;
  }
}
