import { writeFile } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { createLogger } from '@keelson/service';
import { tracingCheck } from '@keelson/stack/src/doctor';
import { freePort } from '@keelson/service';
import { startTestMesh, type TestMesh } from './support/mesh';
import { quietTemporalRuntime } from './support/temporalServer';
import { jaegerTraceSvg } from './support/traceSvg';
import { jaegerTraces, startJaeger, type Jaeger, type JaegerTrace } from './support/observability';
import { projectWithWorkflow, startWorkflow, waitForRun } from './support/runs';
import { until } from './support/until';

quietTemporalRuntime();

/** One bash node that prints the trace context its process was given. */
const TRACED = `
name: traced
description: Prints the trace context of its process.
nodes:
  - id: hello
    type: bash
    bash: echo "traceparent=$TRACEPARENT"
`;

describe('traces into a real Jaeger', () => {
  let jaeger: Jaeger;
  let mesh: TestMesh;
  const logLines: Record<string, unknown>[] = [];
  /** Records that do not name their service exactly once (one log: there are none). */
  const unnamed: string[] = [];

  beforeAll(async () => {
    jaeger = await startJaeger();
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n')) {
          if (!line.trim()) continue;
          // One log: each record names its service once.
          if (line.split('"service":').length !== 2) unnamed.push(line);
          logLines.push(JSON.parse(line) as Record<string, unknown>);
        }
        done();
      },
    });
    mesh = await startTestMesh({ OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpUrl }, { log: createLogger(undefined, 'debug', sink) });
  });

  afterAll(async () => {
    await mesh?.teardown();
    await jaeger?.stop();
  });

  it('follows one workflow from the gateway through the runs subgraph, the Temporal client and the workflow to its activities and its bash process, in one trace', async () => {
    expect(mesh.tracing).toMatchObject({ enabled: true, tracesUrl: `${jaeger.otlpUrl}/v1/traces` });
    const url = mesh.gatewayUrl;
    const project = await projectWithWorkflow(url, 'traced', { 'traced.yaml': TRACED });
    const started = await startWorkflow(url, 'traced', { projectId: project.id });
    const run = await waitForRun(url, started.id, (r) => r.status === 'SUCCEEDED' || r.status === 'FAILED', 60_000);
    expect(run.status).toBe('SUCCEEDED');

    // The bash process was handed the trace: its TRACEPARENT names the trace and its process span.
    const output = run.nodes.find((n) => n.id === 'hello')!.output ?? '';
    const match = /traceparent=00-([0-9a-f]{32})-([0-9a-f]{16})-01/.exec(output);
    expect(match).not.toBeNull();
    const [, traceId, processSpanId] = match!;

    await mesh.tracing.flush();
    const wanted = ['keelson-gateway', 'keelson-runs', 'keelson-worker'];
    const servicesOf = (t: JaegerTrace | undefined) => new Set(t ? t.spans.map((s) => t.processes[s.processID]!.serviceName) : []);
    const trace = await until(
      `trace ${traceId} in Jaeger with spans of ${wanted.join(', ')}`,
      async () => {
        const res = await fetch(`${jaeger.queryUrl}/api/traces/${traceId}`);
        if (!res.ok) return undefined;
        return ((await res.json()) as { data: JaegerTrace[] }).data[0];
      },
      (t) => wanted.every((s) => servicesOf(t).has(s)) && ['RunWorkflow:dagRun', 'RunActivity:runCommandNode', 'RunActivity:finishRun'].every((n) => t?.spans.some((s) => s.operationName === n)),
      30_000,
    );
    const spans = trace!.spans;
    const named = (service: string) => spans.filter((s) => trace!.processes[s.processID]!.serviceName === service).map((s) => s.operationName);
    // The gateway's request span, named after the operation, and Apollo Gateway's own planning spans.
    expect(named('keelson-gateway')).toEqual(expect.arrayContaining(['mutation', 'gateway.request', 'gateway.plan']));
    // The runs subgraph serves startWorkflow and starts the workflow through the Temporal client.
    expect(named('keelson-runs')).toEqual(expect.arrayContaining(['mutation', 'StartWorkflow:dagRun']));
    // The workflow (in its sandbox, exported through the worker's sink) and its activities.
    expect(named('keelson-worker')).toEqual(expect.arrayContaining(['RunWorkflow:dagRun', 'StartActivity:runCommandNode', 'RunActivity:runCommandNode', 'bash node "hello"']));
    // Every span but the root has its parent in this trace: one connected trace, not pieces.
    const ids = new Set(spans.map((s) => s.spanID));
    const roots = spans.filter((s) => !s.references.some((r) => r.refType === 'CHILD_OF' && ids.has(r.spanID)));
    expect(roots.map((s) => `${trace!.processes[s.processID]!.serviceName} ${s.operationName}`)).toEqual(['keelson-gateway mutation']);
    // The process span is the one named in the bash process's TRACEPARENT.
    expect(spans.find((s) => s.spanID === processSpanId)?.operationName).toBe('bash node "hello"');

    // Logs carry the trace id: the gateway's and the runs subgraph's lines of that request.
    const traced = logLines.filter((l) => l.trace_id === traceId).map((l) => l.service);
    expect(traced).toEqual(expect.arrayContaining(['gateway', 'runs']));
    expect(unnamed).toEqual([]);

    // The README's picture, drawn from this trace (KEELSON_TRACE_PICTURE=<path> writes it).
    if (process.env.KEELSON_TRACE_PICTURE) await writeFile(process.env.KEELSON_TRACE_PICTURE, jaegerTraceSvg(trace!));
    expect(jaegerTraceSvg(trace!)).toContain('RunActivity:runCommandNode');
    // The services list of Jaeger's query API names every service that sent spans.
    expect((await jaegerTraces(jaeger, 'keelson-runs')).some((t) => t.traceID === traceId)).toBe(true);
  });

  it('npm run doctor says whether tracing is on, and whether its receiver takes exports', async () => {
    expect(await tracingCheck({})).toEqual({ status: 'ok', detail: expect.stringMatching(/^off: neither OTEL_EXPORTER_OTLP_ENDPOINT nor OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set/) });
    expect(await tracingCheck({ OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpUrl })).toEqual({ status: 'ok', detail: `on: OTLP/HTTP to ${jaeger.otlpUrl}/v1/traces (it accepts exports)` });
    const closed = `http://127.0.0.1:${await freePort()}/v1/traces`;
    expect(await tracingCheck({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: closed })).toEqual({ status: 'warn', detail: expect.stringContaining(`on, but ${closed} is unreachable`) });
  });
});
