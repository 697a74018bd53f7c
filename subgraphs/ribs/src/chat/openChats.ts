import { openChatsDomain, type ChatRibs, type OpenedChatsDomain } from '@keelson/chats';
import type { RibHost } from '@keelson/host';
import { MeshError } from '@keelson/schema';
import type { Logger, PgTimeouts } from '@keelson/service';
import { connectClient, temporalChatsExecutor } from '@keelson/temporal';
import type { Client } from '@temporalio/client';
import type { RibRunsWiring } from '../runs/ribRuntime';

/** The rib host as the chats domain asks it: agents' seeds, and a rib's own tools. */
export function hostChatRibs(host: () => RibHost | undefined): ChatRibs {
  return {
    async resolveAgent(ribId, slug) {
      const h = host();
      if (!h) return null;
      return h.resolveAgent(ribId, slug);
    },
    async invokeCommand(ribId, name, arg) {
      const h = host();
      if (!h) throw new MeshError('SERVICE_UNAVAILABLE', 'the rib host is not up yet');
      return h.invokeCommand(ribId, name, arg);
    },
    ribTools(ribId) {
      const h = host();
      if (!h || !h.ribIds.includes(ribId)) return null;
      return h
        .tools()
        .filter((t) => t.ownerRibId === ribId)
        .map((t) => t.name);
    },
  };
}

/**
 * The chats domain in the ribs subgraph (its agents and tools are this process's rib host), over
 * Temporal as the runs wiring names it; a Temporal client connected on first use.
 */
export async function openChats(opts: { databaseUrl: string; wiring: RibRunsWiring; host: () => RibHost | undefined; pg?: PgTimeouts; log: Logger }): Promise<OpenedChatsDomain> {
  const { temporal } = opts.wiring;
  let client: Promise<Client> | undefined;
  const lazy = () => {
    client ??= connectClient({ address: temporal.address, namespace: temporal.namespace }).catch((err: unknown) => {
      client = undefined;
      throw err;
    });
    return client;
  };
  const domain = await openChatsDomain({
    databaseUrl: opts.databaseUrl,
    executor: temporalChatsExecutor(lazy, { namespace: temporal.namespace, taskQueue: temporal.taskQueue }, { heartbeatTimeoutMs: opts.wiring.heartbeatTimeoutMs }),
    ribs: hostChatRibs(opts.host),
    ...(opts.pg ? { pg: opts.pg } : {}),
    log: opts.log,
  });
  return {
    services: domain.services,
    async close() {
      const c = await client?.catch(() => undefined);
      await c?.connection.close();
      await domain.close();
    },
  };
}
