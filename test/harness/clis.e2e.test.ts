import { runAcceptanceScenario, startHarnessMesh, type HarnessMesh } from '../support/harness';

jest.setTimeout(240_000);

// One mesh, the five real CLIs side by side: each has its own project and its own HOME under the
// mesh's fresh KEELSON_HOME, so their scenarios run concurrently.
let booted: Promise<HarnessMesh> | undefined;
const mesh = () => (booted ??= startHarnessMesh());

afterAll(async () => {
  await (await booted?.catch(() => undefined))?.teardown();
});

describe('each real CLI through the gateway: a file written with its own tool, events streamed and resumed, the native session resumed, the transcript read', () => {
  it.concurrent('claude-code (startSession pins --session-id)', async () => {
    await runAcceptanceScenario(await mesh(), 'claude-code', 'start');
  });

  it.concurrent('qwen-code (startSession pins --session-id)', async () => {
    await runAcceptanceScenario(await mesh(), 'qwen-code', 'start');
  });

  it.concurrent('pi (startSession pins the session file)', async () => {
    await runAcceptanceScenario(await mesh(), 'pi', 'start');
  });

  it.concurrent('codex (adopts the session a task creates: the CLI mints its thread id)', async () => {
    await runAcceptanceScenario(await mesh(), 'codex', 'task');
  });

  it.concurrent('opencode (adopts the session a task creates: the CLI mints its ses_ id)', async () => {
    await runAcceptanceScenario(await mesh(), 'opencode', 'task');
  });
});
