import 'reflect-metadata';
import { parseEnv } from '@keelson/schema';
import { createLogger, loadDotEnv, stopOnSignals, type Logger } from '@keelson/service';
import { graphiqlLines, startMesh, type RunningMesh } from '@keelson/stack';

/**
 * `npm start`: the whole mesh on its embedded defaults; Ctrl-C shuts it down in order. The gateway
 * runs in a process of its own (so it has a core to itself; the subgraphs and the worker share this
 * one), owned by this one: a crash of it is reported and ends the start. Everything it says is a
 * record of the one log (readable on a terminal, JSON lines otherwise: KEELSON_LOG_FORMAT); only the
 * GraphiQL link with the admin token is written straight to an interactive terminal, never logged.
 */
function main(): void {
  let log: Logger = createLogger('mesh');
  let root: Logger;
  try {
    const dotEnv = loadDotEnv();
    root = createLogger(undefined, parseEnv(process.env).KEELSON_LOG_LEVEL);
    // The start's own lines (progress, URLs, "Press Ctrl-C") show at any KEELSON_LOG_LEVEL: they are its console.
    log = root.child({ service: 'mesh' }, { level: 'info' });
    if (dotEnv.loaded) log.info({ file: dotEnv.file, variables: dotEnv.applied.length }, `read ${dotEnv.file}: ${dotEnv.applied.length} variable(s) set from it (the real environment wins)`);
  } catch (err) {
    log.fatal(`failed to start: ${(err as Error).message}`);
    process.exit(1);
  }
  const say = (line: string) => {
    if (line) log.info(line);
  };
  // Handlers are installed in the same tick as the boot starts: a Ctrl-C while starting still
  // stops what already runs, dev server included.
  const mesh: Promise<RunningMesh> = startMesh({ proof: true, progress: say, handlesSignals: true, gateway: 'process', log: root });
  const signals = stopOnSignals(mesh, log, say, 'gateway, worker, subgraphs, Temporal');

  mesh.then(
    (m) => {
      if (signals.stopping) return;
      void m.gatewayProcess?.exited.then(({ code, signal, requested }) => {
        if (requested || signals.stopping) return;
        log.error({ pid: m.gatewayProcess!.pid, code, signal }, `the gateway process (pid ${m.gatewayProcess!.pid}) exited unexpectedly (code ${code}, signal ${signal})`);
        signals.stop('the gateway process exited', 1);
      });
      const graphiql = m.gatewayUrl.replace(/\/graphql$/, '/');
      const interactive = process.stdout.isTTY === true;
      say(`GraphQL (HTTP + WebSocket): ${m.gatewayUrl}`);
      for (const line of graphiqlLines(graphiql, m.adminToken, interactive)) {
        // The link that carries the token goes to the terminal only (graphiqlLines gives it only then).
        if (interactive && line.includes('#token=')) process.stdout.write(`${line}\n`);
        else say(line);
      }
      say(`Temporal UI:                ${m.temporal.uiUrl ?? '(external server: set TEMPORAL_UI_URL)'}`);
      say(`Temporal frontend:          ${m.temporal.address}`);
      say('Press Ctrl-C to stop.');
    },
    (err: unknown) => {
      log.fatal(`failed to start: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}

main();
