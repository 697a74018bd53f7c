import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { homedir, tmpdir } from 'node:os';
import { configureTemporalRuntime, findTemporalCli, startDevServer, TEMPORAL_CLI_VERSION, workflowBundle, type DevServer } from '@keelson/temporal';

/** Address of the Temporal frontend tests use; set by globalSetup, or by you to reuse a running server. */
export const ADDRESS_ENV = 'KEELSON_TEST_TEMPORAL_ADDRESS';
/** Web UI base URL of the globalSetup server (unset when reusing a server named by {@link ADDRESS_ENV}). */
export const UI_URL_ENV = 'KEELSON_TEST_TEMPORAL_UI_URL';

/** File holding the workflow bundle (untraced) globalSetup built once for the whole run. */
export const BUNDLE_ENV = 'KEELSON_TEST_WORKFLOW_BUNDLE';

const key = Symbol.for('keelson.test.temporalServer');
const bundleKey = Symbol.for('keelson.test.workflowBundle');
type Holder = { [key]?: DevServer; [bundleKey]?: string };

/**
 * Starts the one in-memory dev server of a Jest run on free ports and publishes its address in
 * {@link ADDRESS_ENV}, which test workers inherit. Does nothing when that variable is already set.
 * @throws when the `temporal` CLI is not built, saying how to build it.
 */
export async function startTestTemporal(): Promise<void> {
  if (process.env[ADDRESS_ENV]) return;
  const home = process.env.KEELSON_HOME ?? join(homedir(), '.keelson');
  const cli = await findTemporalCli({ home });
  if (!cli) {
    throw new Error(
      `Integration tests need the Temporal CLI (it embeds the dev server), found neither on PATH nor at ${join(home, 'bin', 'temporal')}. ` +
        `Build it once (about 4 minutes): GOBIN=${join(home, 'bin')} go install github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION} ` +
        `(or run \`npm start\`, which builds it), or point ${ADDRESS_ENV} at a running server that has the Keelson search attributes.`,
    );
  }
  const server = await startDevServer({ cli, port: 0, uiPort: 0 });
  (globalThis as Holder)[key] = server;
  process.env[ADDRESS_ENV] = server.address;
  process.env[UI_URL_ENV] = server.uiUrl;
}

/** Stops the server {@link startTestTemporal} started, if it started one. */
export async function stopTestTemporal(): Promise<void> {
  const holder = globalThis as Holder;
  const server = holder[key];
  delete holder[key];
  if (!server) return;
  await server.stop();
  delete process.env[ADDRESS_ENV];
  delete process.env[UI_URL_ENV];
}

/** The frontend address of the run's Temporal server, for tests that start workers and clients. */
export function testTemporalAddress(): string {
  const address = process.env[ADDRESS_ENV];
  if (!address) {
    throw new Error(
      `${ADDRESS_ENV} is not set: run the tests through Jest (its globalSetup starts a Temporal dev server) ` +
        `or set it to the address of a running one.`,
    );
  }
  return address;
}

/**
 * Keeps the SDK's INFO chatter (worker state changes) out of test output. Call at the top of a test
 * file, before any worker is created; later calls in the same module registry are no-ops.
 */
export function quietTemporalRuntime(): void {
  configureTemporalRuntime('warn');
}

/**
 * Builds the (untraced) workflow bundle once for the Jest run and publishes its file in
 * {@link BUNDLE_ENV}, which test workers inherit: bundling takes seconds of CPU, and every test file
 * that starts a worker would otherwise bundle again (each file has its own module registry).
 */
export async function buildTestWorkflowBundle(): Promise<void> {
  if (process.env[BUNDLE_ENV]) return;
  const dir = await mkdtemp(join(tmpdir(), 'keelson-test-bundle-'));
  const file = join(dir, 'workflows.js');
  await writeFile(file, (await workflowBundle()).code);
  (globalThis as Holder)[bundleKey] = dir;
  process.env[BUNDLE_ENV] = file;
}

/** Removes the file {@link buildTestWorkflowBundle} wrote, if it wrote one. */
export async function removeTestWorkflowBundle(): Promise<void> {
  const holder = globalThis as Holder;
  const dir = holder[bundleKey];
  delete holder[bundleKey];
  if (!dir) return;
  await rm(dir, { recursive: true, force: true });
  delete process.env[BUNDLE_ENV];
}

/**
 * The file of the run's prebuilt workflow bundle, for `startWorker({ workflowBundleFile })` and a
 * mesh's KEELSON_WORKFLOW_BUNDLE (workers with tracing on still bundle their own); undefined outside
 * Jest's globalSetup, where workers bundle as usual.
 */
export function testWorkflowBundleFile(): string | undefined {
  return process.env[BUNDLE_ENV];
}
