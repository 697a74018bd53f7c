import 'reflect-metadata';
import { loadDotEnv } from '@keelson/service';
import { graphiqlLines, startMesh, type RunningMesh } from '@keelson/stack';

const say = (line: string) => process.stdout.write(`[keelson] ${line}\n`);

/**
 * `npm start`: the whole mesh on its embedded defaults; Ctrl-C shuts it down in order. The gateway
 * runs in a process of its own (so it has a core to itself; the subgraphs and the worker share this
 * one), owned by this one: a crash of it is reported and ends the start.
 */
function main(): void {
  try {
    const dotEnv = loadDotEnv();
    if (dotEnv.loaded) say(`read ${dotEnv.file}: ${dotEnv.applied.length} variable(s) set from it (the real environment wins)`);
  } catch (err) {
    console.error(`[keelson] failed to start: ${(err as Error).message}`);
    process.exit(1);
  }
  // Handlers are installed in the same tick as the boot starts: a Ctrl-C while starting still
  // stops what already runs, dev server included.
  const mesh: Promise<RunningMesh> = startMesh({ proof: true, progress: say, handlesSignals: true, gateway: 'process' });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    say(`${signal}: stopping gateway, worker, subgraphs, Temporal…`);
    mesh
      .then((m) => m.stop())
      .then(
        () => {
          say('stopped');
          process.exit(0);
        },
        (err: unknown) => {
          console.error(err);
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));

  mesh.then(
    (m) => {
      if (stopping) return;
      void m.gatewayProcess?.exited.then(({ code, signal, requested }) => {
        if (requested || stopping) return;
        say(`the gateway process (pid ${m.gatewayProcess!.pid}) exited unexpectedly (code ${code}, signal ${signal})`);
        stopping = true;
        void m.stop().finally(() => process.exit(1));
      });
      const graphiql = m.gatewayUrl.replace(/\/graphql$/, '/');
      say('');
      say(`GraphQL (HTTP + WebSocket): ${m.gatewayUrl}`);
      for (const line of graphiqlLines(graphiql, m.adminToken, process.stdout.isTTY === true)) say(line);
      say(`Temporal UI:                ${m.temporal.uiUrl ?? '(external server: set TEMPORAL_UI_URL)'}`);
      say(`Temporal frontend:          ${m.temporal.address}`);
      say('Press Ctrl-C to stop.');
    },
    (err: unknown) => {
      console.error(`[keelson] failed to start: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}

main();
