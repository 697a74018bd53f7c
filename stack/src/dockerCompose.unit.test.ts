import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { envSchema } from '@keelson/schema';
import { subgraphs } from './subgraphs';

const root = join(__dirname, '..', '..');

interface ComposeService {
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  expose?: string[];
  image?: string;
  build?: string;
  depends_on?: string[] | Record<string, unknown>;
}

const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, ComposeService>;
};
const services = compose.services;

function entryOf(service: ComposeService): string {
  const cmd = service.command ?? [];
  expect(cmd.slice(0, 3)).toEqual(['node', '-r', './scripts/register.js']);
  return cmd[3]!;
}

describe('docker-compose.yml', () => {
  it('runs Postgres, Temporal on Postgres, its UI, the worker and the gateway', () => {
    // Postgres 15 with pgvector, so memory search can be hybrid.
    expect(services.postgres?.image).toMatch(/^pgvector\/pgvector:[\d.]+-pg15$/);
    expect(services.temporal?.image).toMatch(/^temporalio\/auto-setup:/);
    expect(services.temporal?.environment?.DB).toBe('postgres12');
    expect(services['temporal-ui']?.image).toMatch(/^temporalio\/ui:/);
    expect(entryOf(services.worker!)).toBe('apps/worker/main.ts');
    expect(entryOf(services.gateway!)).toBe('apps/gateway/main.ts');
  });

  it('gives every subgraph its own container on its default port, and the gateway its URL', () => {
    for (const s of subgraphs) {
      const svc = services[s.name];
      expect(svc).toBeDefined();
      // One entry per deployable: the app of the same name.
      expect(entryOf(svc!)).toBe(`apps/${s.name}/main.ts`);
      const portVar = `KEELSON_${s.name.toUpperCase()}_PORT`;
      expect(svc!.environment?.[portVar]).toBe(String(s.defaultPort));
      expect(svc!.expose).toContain(String(s.defaultPort));
      expect(services.gateway!.environment?.[`KEELSON_${s.name.toUpperCase()}_URL`]).toBe(
        `http://${s.name}:${s.defaultPort}/graphql`,
      );
    }
  });

  it('runs ribs and runs through the stack compositions that wire them to each other, both reaching Temporal and the projects subgraph', () => {
    expect(entryOf(services.ribs!)).toBe('apps/ribs/main.ts');
    expect(entryOf(services.runs!)).toBe('apps/runs/main.ts');
    for (const name of ['ribs', 'runs']) {
      const svc = services[name]!;
      expect({ name, temporal: svc.environment?.TEMPORAL_ADDRESS }).toEqual({ name, temporal: 'temporal:7233' });
      expect({ name, projects: svc.environment?.KEELSON_PROJECTS_URL }).toEqual({ name, projects: 'http://projects:4001/graphql' });
      expect({ name, dependsOn: svc.depends_on }).toMatchObject({ name, dependsOn: { 'temporal-setup': { condition: 'service_completed_successfully' } } });
    }
  });

  it('points every command at a file that exists', () => {
    for (const [name, svc] of Object.entries(services)) {
      if (!svc.build) continue;
      const entry = entryOf(svc);
      expect({ name, exists: existsSync(join(root, entry)) }).toEqual({ name, exists: true });
    }
  });

  it('publishes only the gateway and the Temporal UI, and only on the host loopback', () => {
    const published = Object.entries(services).flatMap(([name, svc]) => (svc.ports ?? []).map((p) => [name, p]));
    expect(published).toEqual([
      ['temporal-ui', '127.0.0.1:8233:8080'],
      ['gateway', '127.0.0.1:4000:4000'],
    ]);
  });

  it('runs authenticated: every service shares the assertion secret from .env and answers its in-network name, and sets only variables the mesh knows', () => {
    const known = new Set(Object.keys(envSchema.shape));
    for (const [name, svc] of Object.entries(services)) {
      if (!svc.build) continue;
      expect({ name, auth: svc.environment?.KEELSON_AUTH ?? 'on' }).toEqual({ name, auth: 'on' });
      expect({ name, secret: svc.environment?.KEELSON_ASSERTION_SECRET }).toEqual({ name, secret: expect.stringMatching(/^\$\{KEELSON_ASSERTION_SECRET:\?/) });
      expect({ name, hosts: svc.environment?.KEELSON_PUBLIC_HOSTS?.split(',') }).toEqual({ name, hosts: expect.arrayContaining([...subgraphs.map((s) => s.name), 'gateway']) });
      for (const key of Object.keys(svc.environment ?? {})) expect({ name, key, known: known.has(key) }).toEqual({ name, key, known: true });
    }
  });

  it('lets exactly the containers that run commands use bubblewrap (user namespaces, a fresh /proc)', () => {
    const sandboxed = Object.entries(services).filter(([, svc]) => (svc as { security_opt?: string[] }).security_opt).map(([name]) => name).sort();
    expect(sandboxed).toEqual(['ribs', 'sessions', 'worker']);
    for (const name of sandboxed) {
      expect((services[name] as { security_opt?: string[] }).security_opt).toEqual(['seccomp=unconfined', 'apparmor=unconfined', 'systempaths=unconfined']);
    }
  });

  it('builds from a Dockerfile that installs every workspace', () => {
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    const workspaces = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { workspaces: string[] }).workspaces;
    for (const ws of workspaces) expect(dockerfile).toContain(`COPY ${ws}/package.json ${ws}/`);
  });
});
