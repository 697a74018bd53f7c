import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { freePort } from '@keelson/service';
import { until } from './until';

/** A binary from `envVar`, else `<home>/.keelson/bin/<name>`, else PATH; the error says how to get it. */
function findBinary(name: string, envVar: string, howToGet: string): string {
  const named = process.env[envVar];
  if (named) return named;
  const cached = join(homedir(), '.keelson', 'bin', name);
  if (existsSync(cached)) return cached;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  throw new Error(`${name} is not installed: ${howToGet} (or set ${envVar}); .ci/run does this`);
}

interface Backend {
  dir: string;
  child: ChildProcess;
  output: string[];
}

async function launch(bin: string, args: string[], dir: string, ready: () => Promise<boolean>, what: string): Promise<Backend> {
  const output: string[] = [];
  const child = spawn(bin, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (d: Buffer) => output.push(d.toString()));
  child.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = `exited ${code ?? signal}`));
  try {
    await until(`${what} to be ready`, async () => {
      if (exited) throw new Error(`${what} ${exited}:\n${output.join('').slice(-3000)}`);
      return ready().catch(() => false);
    }, (ok) => ok, 30_000);
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}\n${output.join('').slice(-3000)}`);
  }
  return { dir, child, output };
}

async function end(backend: Backend): Promise<void> {
  if (backend.child.exitCode === null && backend.child.signalCode === null) {
    const gone = new Promise((resolve) => backend.child.once('exit', resolve));
    backend.child.kill('SIGTERM');
    const timer = setTimeout(() => backend.child.kill('SIGKILL'), 5_000);
    await gone;
    clearTimeout(timer);
  }
  await rm(backend.dir, { recursive: true, force: true });
}

export interface Jaeger {
  /** OTLP over HTTP: the base URL for OTEL_EXPORTER_OTLP_ENDPOINT. */
  otlpUrl: string;
  /** The query service (HTTP API under /api, the UI at /). */
  queryUrl: string;
  stop(): Promise<void>;
}

/**
 * Jaeger all-in-one (v2, `cmd/jaeger` v1.76.0, built by scripts/jaeger/build.sh) on free loopback
 * ports: an OTLP/HTTP receiver, in-memory storage and the query API. Nothing else is opened.
 */
export async function startJaeger(): Promise<Jaeger> {
  const bin = findBinary('jaeger', 'JAEGER_BIN', 'run scripts/jaeger/build.sh');
  const dir = await mkdtemp(join(tmpdir(), 'keelson-jaeger-'));
  const [otlp, query, grpc] = [await freePort(), await freePort(), await freePort()];
  const config = `
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:${query}
    grpc:
      endpoint: 127.0.0.1:${grpc}
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${otlp}
processors:
  batch:
    timeout: 200ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`;
  await writeFile(join(dir, 'jaeger.yaml'), config);
  const queryUrl = `http://127.0.0.1:${query}`;
  const backend = await launch(bin, ['--config', `file:${join(dir, 'jaeger.yaml')}`], dir, async () => (await fetch(`${queryUrl}/api/services`)).ok, 'jaeger');
  return { otlpUrl: `http://127.0.0.1:${otlp}`, queryUrl, stop: () => end(backend) };
}

/** A span as Jaeger's query API (`/api/traces/<id>`) answers it. */
export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  processID: string;
  startTime: number;
  duration: number;
  references: { refType: string; spanID: string }[];
  tags: { key: string; value: unknown }[];
}

export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string }>;
}

/** The traces Jaeger holds for `service` (most recent first, at most `limit`). */
export async function jaegerTraces(jaeger: Jaeger, service: string, limit = 50): Promise<JaegerTrace[]> {
  const res = await fetch(`${jaeger.queryUrl}/api/traces?service=${encodeURIComponent(service)}&limit=${limit}&lookback=1h`);
  if (!res.ok) throw new Error(`jaeger /api/traces answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { data: JaegerTrace[] | null }).data ?? [];
}

export interface Prometheus {
  url: string;
  stop(): Promise<void>;
}

/**
 * A real Prometheus (the Debian package's binary, run directly) with a temp config and data dir,
 * scraping `targets` (`host:port` → metrics path) every second.
 */
export async function startPrometheus(targets: { job: string; address: string; path?: string }[], opts: { bearerToken?: string; ruleFiles?: string[] } = {}): Promise<Prometheus> {
  const bin = findBinary('prometheus', 'PROMETHEUS_BIN', 'apt-get install -y prometheus');
  const dir = await mkdtemp(join(tmpdir(), 'keelson-prometheus-'));
  const port = await freePort();
  // As the README's job does: the token in a file of its own, sent as `authorization: Bearer`.
  if (opts.bearerToken) await writeFile(join(dir, 'token'), opts.bearerToken, { mode: 0o600 });
  const auth = opts.bearerToken ? `\n    authorization:\n      credentials_file: ${JSON.stringify(join(dir, 'token'))}` : '';
  const jobs = targets
    .map((t) => `  - job_name: ${JSON.stringify(t.job)}\n    metrics_path: ${JSON.stringify(t.path ?? '/metrics')}${auth}\n    static_configs:\n      - targets: [${JSON.stringify(t.address)}]`)
    .join('\n');
  const rules = opts.ruleFiles?.length ? `rule_files:\n${opts.ruleFiles.map((f) => `  - ${JSON.stringify(f)}`).join('\n')}\n` : '';
  await writeFile(join(dir, 'prometheus.yml'), `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n${rules}scrape_configs:\n${jobs}\n`);
  const url = `http://127.0.0.1:${port}`;
  const backend = await launch(
    bin,
    [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    dir,
    async () => (await fetch(`${url}/-/ready`)).ok,
    'prometheus',
  );
  return { url, stop: () => end(backend) };
}

/** One instant query through Prometheus' HTTP API. */
export async function promQuery(prometheus: Prometheus, query: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
  const res = await fetch(`${prometheus.url}/api/v1/query?query=${encodeURIComponent(query)}`);
  const body = (await res.json()) as { status: string; error?: string; data?: { result: { metric: Record<string, string>; value: [number, string] }[] } };
  if (body.status !== 'success') throw new Error(`prometheus query ${query} failed: ${body.error}`);
  return body.data!.result;
}
