import 'reflect-metadata';
import { createLogger, loadDotEnv, stopOnSignals } from '@keelson/service';
import { startClusterFromEnv } from '@keelson/stack';

// `npm run start:cluster`: the production shape as separate processes (README "Production shape");
// Ctrl-C stops the gateways, the services, HAProxy and Temporal, in that order.
const log = createLogger('cluster');
const say = (line: string) => log.info(line);
loadDotEnv();
const cluster = startClusterFromEnv(process.env, say);
const signals = stopOnSignals(cluster, log, say, 'the gateways, the services, HAProxy and Temporal');
cluster.then(
  (c) => {
    if (signals.stopping) return;
    say(`GraphQL through HAProxy (HTTP + WebSocket): ${c.gatewayUrl}`);
    for (const [service, url] of Object.entries(c.serviceUrls)) if (service !== 'gateway') say(`  ${service} (${c.processes(service).length} process(es)) through HAProxy: ${url}`);
    say(`  workers on the task queue: ${c.processes('worker').length}`);
    say(`Temporal frontend (Postgres persistence and visibility): ${c.temporal.address}`);
    say(`Admin token: ${c.tokenFile}; logs: ${c.logDir}`);
    say('Press Ctrl-C to stop.');
  },
  (err: unknown) => {
    log.fatal(`failed to start: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
