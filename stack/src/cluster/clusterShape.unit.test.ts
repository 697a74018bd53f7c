import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { subgraphs } from '../subgraphs';
import { CLUSTER_TEMPORAL_POOLS, CLUSTER_TEMPORAL_VERSION, clusterServices } from './clusterShape';

const root = join(__dirname, '..', '..', '..');

interface ComposeService {
  command?: string[];
  environment?: Record<string, string>;
  image?: string;
  build?: string;
}
const services = (parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, ComposeService> }).services;

describe('the cluster shape and docker-compose.yml describe the same processes', () => {
  it('names the same mesh services, each running apps/<name>/main.ts', () => {
    const composed = Object.entries(services)
      .filter(([, s]) => s.build)
      .map(([name]) => name)
      .sort();
    expect(clusterServices.map((s) => s.name).sort()).toEqual(composed);
    for (const s of clusterServices) expect({ name: s.name, command: services[s.name]!.command }).toEqual({ name: s.name, command: ['node', '-r', './scripts/register.js', `apps/${s.name}/main.ts`] });
  });

  it('gives each service the same port variable and the URLs of the same peers', () => {
    for (const s of clusterServices) {
      const env = services[s.name]!.environment ?? {};
      const ports = Object.keys(env).filter((k) => /^KEELSON_[A-Z]+_PORT$/.test(k));
      expect({ name: s.name, ports }).toEqual({ name: s.name, ports: s.port ? [s.port.variable] : [] });
      if (s.port) expect({ name: s.name, port: env[s.port.variable] }).toEqual({ name: s.name, port: String(s.port.compose) });
      const reached = Object.keys(env)
        .filter((k) => /^KEELSON_[A-Z]+_URL$/.test(k) && subgraphs.some((g) => k === `KEELSON_${g.name.toUpperCase()}_URL`))
        .sort();
      expect({ name: s.name, reached }).toEqual({ name: s.name, reached: s.reaches.map((r) => `KEELSON_${r.toUpperCase()}_URL`).sort() });
      for (const r of s.reaches) {
        const peer = clusterServices.find((p) => p.name === r)!;
        expect({ name: s.name, url: env[`KEELSON_${r.toUpperCase()}_URL`] }).toEqual({ name: s.name, url: `http://${r}:${peer.port!.compose}/graphql` });
      }
    }
  });

  it('shares Postgres, Temporal and the assertion secret across every service', () => {
    for (const s of clusterServices) {
      const env = services[s.name]!.environment ?? {};
      expect({ name: s.name, database: env.DATABASE_URL, temporal: env.TEMPORAL_ADDRESS, secret: env.KEELSON_ASSERTION_SECRET }).toEqual({
        name: s.name,
        database: services.gateway!.environment!.DATABASE_URL,
        temporal: 'temporal:7233',
        secret: expect.stringMatching(/^\$\{KEELSON_ASSERTION_SECRET:\?/),
      });
    }
  });

  it('runs the Temporal server version that scripts/temporal-server/build.sh builds', () => {
    expect(services.temporal!.image).toBe(`temporalio/auto-setup:${CLUSTER_TEMPORAL_VERSION}`);
    expect(services['temporal-setup']!.image).toBe(`temporalio/admin-tools:${CLUSTER_TEMPORAL_VERSION}`);
    const build = readFileSync(join(root, 'scripts', 'temporal-server', 'build.sh'), 'utf8');
    expect(build).toMatch(new RegExp(`^version=v${CLUSTER_TEMPORAL_VERSION.replace(/\./g, '\\.')}$`, 'm'));
  });

  it("gives docker-compose's Temporal server the Postgres pools start:cluster gives its own", () => {
    const env = services.temporal!.environment ?? {};
    expect([env.SQL_MAX_CONNS, env.SQL_MAX_IDLE_CONNS, env.SQL_VIS_MAX_CONNS, env.SQL_VIS_MAX_IDLE_CONNS].map(Number)).toEqual([
      CLUSTER_TEMPORAL_POOLS.persistence,
      CLUSTER_TEMPORAL_POOLS.persistence,
      CLUSTER_TEMPORAL_POOLS.visibility,
      CLUSTER_TEMPORAL_POOLS.visibility,
    ]);
  });

  it('replicates what is stateless behind the load balancer, and runs more than one worker on the task queue', () => {
    expect(Object.fromEntries(clusterServices.filter((s) => s.replicas > 1).map((s) => [s.name, s.replicas]))).toEqual({ runs: 2, sessions: 2, worker: 2, gateway: 2 });
  });
});
