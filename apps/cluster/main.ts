import 'reflect-metadata';
import { createLogger, loadDotEnv } from '@keelson/service';
import { startClusterFromEnv } from '@keelson/stack';

// `npm run start:cluster`: the production shape as separate processes (README "Production shape");
// Ctrl-C stops the gateways, the services, HAProxy and Temporal, in that order.
const log = createLogger('cluster');
const say = (line: string) => log.info(line);
loadDotEnv();
const cluster = startClusterFromEnv(process.env, say);
let stopping = false;
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  say(`${signal}: stopping the gateways, the services, HAProxy and Temporal…`);
  cluster
    .then((c) => c.stop())
    .then(
      () => {
        say('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        log.fatal({ err }, 'stopping failed');
        process.exit(1);
      },
    );
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
cluster.then(
  (c) => {
    if (stopping) return;
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
