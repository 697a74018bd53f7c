import 'reflect-metadata';
import { startMesh } from './startMesh';

/** `npm start`: the whole mesh on its embedded defaults; Ctrl-C shuts it down in order. */
async function main(): Promise<void> {
  const say = (line: string) => process.stdout.write(`[keelson] ${line}\n`);
  const mesh = await startMesh({ proof: true, progress: say });
  say('');
  say(`GraphQL (HTTP + WebSocket): ${mesh.gatewayUrl}`);
  say(`Explorer:                   ${mesh.gatewayUrl.replace(/\/graphql$/, '/')}`);
  say(`Temporal UI:                ${mesh.temporal.uiUrl ?? '(external server: set TEMPORAL_UI_URL)'}`);
  say(`Temporal frontend:          ${mesh.temporal.address}`);
  say('Press Ctrl-C to stop.');
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    say(`${signal}: stopping gateway, worker, subgraphs, Temporal…`);
    mesh.stop().then(
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
}

main().catch((err: unknown) => {
  console.error(`[keelson] failed to start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
