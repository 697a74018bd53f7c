import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRibHost } from '@keelson/host';
import { staticConfigPort } from '@keelson/host-doubles';
import { AssertionKey, serviceIdentity, silentLogger } from '@keelson/service';
import { ProjectOperationError } from '@keelson/ribs-contract';
import { GraphqlProjectsPort, statusForCode } from '../src/projects/graphqlProjectsPort';

const identity = serviceIdentity(AssertionKey.random(), 'ribs');

// The ProjectsPort speaks to the projects subgraph over GraphQL; here a stand-in answers, so every
// error code the projects domain raises can be produced on demand. (test/ribs.e2e.test.ts runs the
// port against the real projects subgraph.)

interface Fake {
  url: string;
  /** The next mutation's answer. */
  answer: { errors?: { message: string; extensions?: Record<string, unknown> }[]; data?: unknown } | 'html';
  server: Server;
}

async function fakeProjects(): Promise<Fake> {
  const fake = { answer: { data: null } } as Fake;
  fake.server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.method !== 'POST') {
        res.statusCode = 404;
        return res.end();
      }
      const { query } = JSON.parse(body) as { query: string };
      if (query.trim().startsWith('{ projects')) {
        res.setHeader('content-type', 'application/json');
        return res.end(JSON.stringify({ data: { projects: [] } }));
      }
      if (fake.answer === 'html') {
        res.statusCode = 502;
        return res.end('<html>bad gateway</html>');
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(fake.answer));
    });
  });
  await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}/graphql`;
  return fake;
}

const node = (name: string) => ({ id: `id-${name}`, name, rootPath: `/w/${name}`, createdAt: '2024-01-01T00:00:00.000Z', workspaces: [], mutationLock: null });

describe('the ProjectsPort over GraphQL', () => {
  let fake: Fake;
  let port: GraphqlProjectsPort;

  beforeAll(async () => {
    fake = await fakeProjects();
    port = new GraphqlProjectsPort({ url: fake.url, identity, log: silentLogger(), startTimeoutMs: 2_000 });
    await port.start();
  });
  afterAll(async () => {
    await port?.stop();
    fake.server.closeAllConnections();
    await new Promise((r) => fake.server.close(r));
  });

  it.each([
    ['BAD_USER_INPUT', 400],
    ['NOT_FOUND', 400],
    ['CONFLICT', 409],
    ['INTERNAL', 500],
    ['INTERNAL_SERVER_ERROR', 500],
    ['UPSTREAM_FAILED', 502],
    ['SERVICE_UNAVAILABLE', 503],
  ])('maps %s to ProjectOperationError %i, keeping the message', async (code, status) => {
    fake.answer = { errors: [{ message: `the domain said ${code}`, extensions: { code } }] };
    const failure = port.createProject({ name: 'alpha' });
    await expect(failure).rejects.toBeInstanceOf(ProjectOperationError);
    await expect(failure).rejects.toMatchObject({ status, message: `the domain said ${code}` });
    expect(statusForCode(code)).toBe(status);
  });

  it('reads an answer that is not GraphQL as a 500', async () => {
    fake.answer = 'html';
    await expect(port.acquireMutationLock({ projectId: 'p', purpose: 'x', holder: 'h' })).rejects.toMatchObject({ status: 500, message: expect.stringMatching(/HTTP 502 without a GraphQL body/) });
  });

  it('makes its own registrations visible to getProjects at once', async () => {
    fake.answer = { data: { createProject: node('beta') } };
    const project = await port.createProject({ name: 'beta' });
    expect(project).toEqual({ ...node('beta') });
    expect(port.getProjects().map((p) => p.name)).toEqual(['beta']);
    fake.answer = { data: { acquireMutationLock: { id: 'lock-1', purpose: 'x', holder: 'rib:demo', acquiredAt: 't', project: { ...node('beta'), mutationLock: { id: 'lock-1', purpose: 'x', holder: 'rib:demo', acquiredAt: 't' } } } } };
    expect(await port.acquireMutationLock({ projectId: 'id-beta', purpose: 'x', holder: 'rib:demo' })).toEqual({ id: 'lock-1', purpose: 'x', holder: 'rib:demo', acquiredAt: 't', projectId: 'id-beta' });
    expect(port.getProjects()[0]!.mutationLock).toMatchObject({ holder: 'rib:demo' });
    fake.answer = { data: { releaseMutationLock: true } };
    await port.releaseMutationLock('lock-1');
    expect(port.getProjects()[0]!.mutationLock).toBeNull();
  });

  it('carries the status through a rib\'s project seams', async () => {
    const host = await createRibHost({ available: { demo: { id: 'demo', displayName: 'Demo' } }, env: {}, logger: silentLogger(), config: staticConfigPort({}), projects: port, home: '/tmp/keelson-unused-home' });
    try {
      fake.answer = { errors: [{ message: 'a project named "alpha" is already registered', extensions: { code: 'CONFLICT' } }] };
      await expect(host.context('demo')!.createProject!({ name: 'alpha' })).rejects.toMatchObject({ name: 'ProjectOperationError', status: 409, message: expect.stringMatching(/already registered/) });
    } finally {
      await host.dispose();
    }
  });
});

describe('the ProjectsPort before the projects subgraph answers', () => {
  it('boots anyway, serves no projects, and answers 503 until the first load', async () => {
    const port = new GraphqlProjectsPort({ url: 'http://127.0.0.1:9/graphql', identity, log: silentLogger(), startTimeoutMs: 200, reconnectDelayMs: 50 });
    try {
      await port.start();
      expect(port.ready).toBe(false);
      expect(port.getProjects()).toEqual([]);
      await expect(port.createProject({ name: 'alpha' })).rejects.toMatchObject({ status: 503, message: expect.stringMatching(/not ready/) });
      await expect(port.request('{ projects { id } }')).rejects.toMatchObject({ status: 503, message: expect.stringMatching(/unreachable/) });
    } finally {
      await port.stop();
    }
  });
});
