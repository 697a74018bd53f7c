import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '@keelson/service';
import { gqlData, subscribe } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';
import { promQuery, startPrometheus, type Prometheus } from './support/observability';
import { startWorkflow, waitForRun } from './support/runs';
import { until } from './support/until';

const RULES = join(__dirname, '..', 'ops', 'prometheus', 'keelson.rules.yml');
const DASHBOARD = join(__dirname, '..', 'ops', 'grafana', 'keelson-mesh.json');

/** `promtool check metrics` of an exposition: its complaints ('' when clean). */
function promtoolCheck(text: string): string {
  try {
    return execFileSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] }).trim();
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    return `${e.stdout ?? ''}${e.stderr ?? ''}`.trim() || e.message;
  }
}

// No quietTemporalRuntime(): the mesh installs the SDK's Runtime itself, with the worker's metrics endpoint.

describe('metrics into a real Prometheus', () => {
  let prometheus: Prometheus | undefined;
  let mesh: TestMesh;
  let workerMetricsPort: number;

  beforeAll(async () => {
    workerMetricsPort = await freePort();
    mesh = await startTestMesh({ KEELSON_WORKER_METRICS_PORT: String(workerMetricsPort) });
  });

  afterAll(async () => {
    await mesh?.teardown();
    await prometheus?.stop();
  });

  it('serves Prometheus metrics that a real Prometheus scrapes: requests and latency per operation, open subscriptions, event-log lag, Temporal worker metrics', async () => {
    const hostOf = (u: string) => new URL(u).host;
    // /metrics names the operations callers sent: a reader's token only, at the gateway and at a subgraph.
    for (const url of [mesh.gatewayUrl, mesh.subgraphUrls.runs!]) {
      const anonymous = await fetch(new URL('/metrics', url));
      expect({ url, status: anonymous.status }).toEqual({ url, status: 401 });
      expect(await anonymous.text()).not.toContain('keelson_graphql');
    }
    const { createApiToken } = await gqlData<{ createApiToken: { token: string } }>(mesh.gatewayUrl, 'mutation { createApiToken(name: "prometheus", scopes: ["read"]) { token } }');
    prometheus = await startPrometheus(
      [
        { job: 'gateway', address: hostOf(mesh.gatewayUrl) },
        { job: 'runs', address: hostOf(mesh.subgraphUrls.runs!) },
        { job: 'worker', address: `127.0.0.1:${workerMetricsPort}` },
      ],
      { bearerToken: createApiToken.token, ruleFiles: [RULES] },
    );
    expect(mesh.workerMetricsUrl).toBe(`http://127.0.0.1:${workerMetricsPort}/metrics`);
    const url = mesh.gatewayUrl;
    for (let i = 0; i < 3; i += 1) await gqlData(url, 'query MetricsProbe { projects { id } }');
    const events = subscribe(mesh.gatewayWsUrl, 'subscription WatchRuns { runEvents { cursor type } }');
    try {
      const series = (q: string) => until(`prometheus: ${q}`, () => promQuery(prometheus!, q), (r) => r.length > 0, 30_000);

      const requests = await series('keelson_graphql_requests_total{job="gateway",service="gateway",operation="MetricsProbe",type="query",outcome="ok"} >= 3');
      expect(Number(requests[0]!.value[1])).toBeGreaterThanOrEqual(3);
      const latency = await series('keelson_graphql_request_duration_seconds_count{job="gateway",service="gateway",operation="MetricsProbe"}');
      expect(Number(latency[0]!.value[1])).toBeGreaterThanOrEqual(3);
      // The same query served by the projects subgraph, in this process's registry.
      await series('keelson_graphql_request_duration_seconds_bucket{job="runs",service="projects",le="+Inf"}');

      // One subscription open at the gateway and at the runs subgraph it is routed to.
      const open = await series('keelson_graphql_subscriptions_open{job="gateway",service="gateway",operation="WatchRuns"} == 1');
      expect(open[0]!.value[1]).toBe('1');
      await series('keelson_graphql_subscriptions_open{job="gateway",service="runs"} >= 1');
      // The runs subgraph's tail of the run stream: a consumer with its lag (caught up: 0).
      const lag = await series('keelson_event_log_lag_events{job="runs",stream="runs"}');
      expect(lag[0]!.metric.consumer).toBe('runs subscription');
      expect(Number(lag[0]!.value[1])).toBeGreaterThanOrEqual(0);

      // The Temporal SDK's worker metrics, scraped from the worker's own endpoint.
      const worker = await series('{job="worker",__name__=~"temporal_.+"}');
      expect(worker.map((r) => r.metric.__name__)).toEqual(expect.arrayContaining([expect.stringMatching(/^temporal_/)]));
    } finally {
      await events.close();
    }
    // Every service's exposition passes promtool's lint, and the process series have their standard names.
    const exposition = async (url: string) => {
      const res = await fetch(new URL('/metrics', url), { headers: { authorization: `Bearer ${createApiToken.token}` } });
      expect(res.status).toBe(200);
      return res.text();
    };
    for (const url of [mesh.gatewayUrl, mesh.subgraphUrls.runs!]) {
      const text = await exposition(url);
      expect({ url, promtool: promtoolCheck(text) }).toEqual({ url, promtool: '' });
      expect(text).toMatch(/^process_cpu_user_seconds_total /m);
      expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
      expect(text).toMatch(/^nodejs_active_handles\{type=/m);
    }
    // Refusals by reason and failures by code: a request without a credential, a reader's mutation.
    await fetch(mesh.gatewayUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ projects { id } }"}' });
    const refused = await fetch(mesh.gatewayUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${createApiToken.token}` },
      body: JSON.stringify({ query: 'mutation Denied { createProject(input: { name: "nope" }) { id } }' }),
    });
    expect(((await refused.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('FORBIDDEN');
    const after = await exposition(mesh.gatewayUrl);
    expect(after).toMatch(/^keelson_refusals_total\{service="gateway",reason="unauthenticated"\} [1-9]/m);
    expect(after).toMatch(/^keelson_refusals_total\{service="gateway",reason="scope"\} [1-9]/m);
    expect(after).toMatch(/^keelson_graphql_requests_total\{service="gateway",operation="Denied",type="mutation",outcome="error",code="FORBIDDEN"\} 1$/m);

    // The shipped alert rules: valid for promtool, and every one evaluates against this live mesh.
    expect(execFileSync('promtool', ['check', 'rules', RULES], { encoding: 'utf8' })).toMatch(/SUCCESS: 6 rules found/);
    const rules = await until(
      'every shipped rule evaluated',
      async () => {
        const res = (await (await fetch(`${prometheus!.url}/api/v1/rules`)).json()) as { data: { groups: { rules: { name: string; health: string; lastError?: string }[] }[] } };
        return res.data.groups.flatMap((g) => g.rules);
      },
      (r) => r.length === 6 && r.every((rule) => rule.health !== 'unknown'),
      30_000,
    );
    expect(rules.map((r) => ({ name: r.name, health: r.health, lastError: r.lastError ?? '' }))).toEqual(rules.map((r) => ({ name: r.name, health: 'ok', lastError: '' })));
    // The worker-absent rule watches a series the worker really serves.
    expect((await promQuery(prometheus!, 'temporal_worker_task_slots_available')).length).toBeGreaterThan(0);
    // The shipped dashboard: every panel's query runs against this Prometheus; the gateway's requests show.
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] };
    expect(dashboard.panels.length).toBeGreaterThan(8);
    for (const panel of dashboard.panels) for (const t of panel.targets) await expect(promQuery(prometheus!, t.expr)).resolves.toEqual(expect.any(Array));
    await until('the dashboard\'s gateway requests panel to show data', () => promQuery(prometheus!, dashboard.panels[0]!.targets[0]!.expr), (r) => r.length > 0, 30_000);

    // Open approvals, from the runs domain: a gated run paused at its gate shows up.
    const { createProject } = await gqlData<{ createProject: { id: string } }>(mesh.gatewayUrl, 'mutation { createProject(input: { name: "metrics-gated" }) { id } }');
    const started = await startWorkflow(mesh.gatewayUrl, 'project-check', { projectId: createProject.id });
    await waitForRun(mesh.gatewayUrl, started.id, (r) => r.status === 'PAUSED', 60_000);
    const gated = await exposition(mesh.subgraphUrls.runs!);
    expect(gated).toMatch(/^keelson_approvals_open\{kind="RUN_GATE"\} [1-9]/m);
    expect(gated).toMatch(/^keelson_approvals_oldest_open_seconds\{kind="RUN_GATE"\} \d/m);

    // Closed: the gauge comes back down.
    await until('the closed subscription to leave the gauge', () => promQuery(prometheus!, 'keelson_graphql_subscriptions_open{job="gateway",service="gateway",operation="WatchRuns"}'), (r) => r[0]?.value[1] === '0', 30_000);
  });
});
