import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRibHost, InMemorySnapshotStore, type RibHost } from '@keelson/host';
import { staticConfigPort } from '@keelson/host-doubles';
import { swarmInputBounds, swarmLimitBounds, type StartSwarmInput } from '@keelson/schema';
import { silentLogger } from '@keelson/service';
import swarmRib, { AGENT_TOOL_NAMES, configureSwarmOperator, LEAD_TOOL_NAMES, MERGE_TOOL_NAME, OPERATOR_TOOL_NAMES, SWARM_DOCS, type SwarmOperatorApi, type SwarmSummary } from '../src';

const summary = (over: Partial<SwarmSummary> = {}): SwarmSummary => ({
  id: '11111111-1111-4111-8111-111111111111',
  task: 'Check A',
  status: 'RUNNING',
  turnsUsed: 2,
  conclusion: null,
  error: null,
  op: { id: '22222222-2222-4222-8222-222222222222' },
  channel: { name: 'swarm-11111111', webUrl: 'http://127.0.0.1:18080/app' },
  agents: [{ id: 'lead', handle: 's11111111-lead', lead: true, status: 'BUSY', turns: 2, inboxDepth: 0, finished: false }],
  ...over,
});

/** A swarms service double recording what the operator tools asked of it. */
function fakeApi() {
  const calls: string[] = [];
  const api: SwarmOperatorApi = {
    async start(input: StartSwarmInput) {
      calls.push(`start ${input.task}`);
      return summary({ task: input.task });
    },
    async get(id) {
      calls.push(`get ${id}`);
      return summary({ id, status: 'DONE', conclusion: 'all good' });
    },
    async live() {
      return [summary()];
    },
    async stop(id, reason) {
      calls.push(`stop ${id} ${reason ?? ''}`.trim());
      return summary({ id });
    },
    async transcript() {
      return [{ root: { id: 'm1', body: 'kickoff', replyCount: 1, author: { handle: null, displayName: 'Local Captain', agentId: null } }, replies: [{ id: 'm2', body: 'on it', replyCount: 0, author: { handle: 's1-lead', displayName: 'lead', agentId: 'lead' } }] }];
    },
    async server() {
      return { mode: 'MANAGED', url: 'http://127.0.0.1:18080', running: true, reason: null, version: '0.7.0', liveSwarms: 1 };
    },
    async startServer() {
      calls.push('startServer');
      return this.server();
    },
    async stopServer() {
      calls.push('stopServer');
      return this.server();
    },
    async resetServer(confirm) {
      calls.push(`resetServer ${confirm}`);
      return this.server();
    },
  };
  return { api, calls };
}

describe('the swarm rib', () => {
  let host: RibHost;
  const fake = fakeApi();
  /** The caller each operator call was made as (the factory's argument). */
  const callers: (string | undefined)[] = [];

  beforeAll(async () => {
    configureSwarmOperator((caller) => {
      callers.push(caller ? `${caller.kind}:${caller.subject}:${caller.scopes.join(',')}` : undefined);
      return fake.api;
    });
    host = await createRibHost({
      available: { swarm: swarmRib },
      env: {},
      home: mkdtempSync(join(tmpdir(), 'keelson-swarm-rib-')),
      logger: silentLogger(),
      config: staticConfigPort({}),
      snapshotStore: new InMemorySnapshotStore(),
    });
  });
  afterAll(async () => {
    configureSwarmOperator(undefined);
    await host?.dispose();
  });

  const own = () => host.tools().filter((t) => t.ownerRibId === 'swarm').map((t) => t.name).sort();
  const run = (name: string, input: unknown, turnContext?: Record<string, unknown>) => host.executeTool({ name, input, surface: 'chat', callerRibId: 'swarm', ...(turnContext ? { turnContext } : {}) });

  describe('its inline keelson_docs corpus, checked against the code', () => {
    it('documents every tool the rib registers, and names no tool it does not', () => {
      const registered = own();
      expect(registered).toEqual([...AGENT_TOOL_NAMES, ...LEAD_TOOL_NAMES, MERGE_TOOL_NAME, ...OPERATOR_TOOL_NAMES].sort());
      for (const name of registered) expect({ name, documented: SWARM_DOCS.includes(`\`${name}\``) }).toEqual({ name, documented: true });
      const named = new Set([...SWARM_DOCS.matchAll(/\bchat_[a-z_]+/g)].map((m) => m[0]));
      expect([...named].filter((n) => !registered.includes(n))).toEqual([]);
    });

    it('states every limit with the bounds the launch schema enforces', () => {
      const tool = (name: string) => host.toolInputSchema(name);
      expect(tool('chat_swarm_start')).toBeDefined();
      for (const [name, b] of Object.entries(swarmLimitBounds)) {
        const m = new RegExp(`\`${name}\`: (\\d+)–(\\d+), default (\\d+)`).exec(SWARM_DOCS);
        expect({ name, documented: m?.slice(1).map(Number) }).toEqual({ name, documented: [b.min, b.max, b.default] });
      }
      expect(SWARM_DOCS).toContain(`\`task\`: 1–${swarmInputBounds.taskChars} characters`);
      expect(SWARM_DOCS).toContain(`at most ${swarmInputBounds.evidenceItems} items, ${swarmInputBounds.evidenceChars} characters together`);
    });

    it('holds the tools to what it states: each documented bound accepted at its edge and refused past it', async () => {
      for (const [name, b] of Object.entries(swarmLimitBounds)) {
        expect((await run('chat_swarm_start', { task: 't', limits: { [name]: b.max } })).status).toBe('ok');
        const over = await run('chat_swarm_start', { task: 't', limits: { [name]: b.max + 1 } });
        expect({ name, status: over.status, content: over.content }).toEqual({ name, status: 'invalid-input', content: expect.stringContaining(`${name} must be between ${b.min} and ${b.max}`) });
        expect((await run('chat_swarm_start', { task: 't', limits: { [name]: b.min - 1 } })).status).toBe('invalid-input');
      }
      expect((await run('chat_swarm_start', { task: 'x'.repeat(swarmInputBounds.taskChars + 1) })).content).toContain(`cut 1`);
      expect((await run('chat_swarm_start', { task: 't', evidence: [{ title: 'a\nb', body: 'x' }] })).content).toContain('a title is one line');
      expect((await run('chat_post', { body: 'x'.repeat(8001) })).content).toContain('a post is at most 8000 characters');
    });

    it('is served by keelson_docs, topic by topic, never whole', async () => {
      const list = await host.executeTool({ name: 'keelson_docs', input: {}, surface: 'chat' });
      expect(list.content).toContain('swarm/swarm: Swarm');
      const routing = await host.executeTool({ name: 'keelson_docs', input: { source: 'swarm/swarm', topic: 'Routing' }, surface: 'chat' });
      expect(routing.content).toMatch(/^# Routing/);
      expect(routing.content).not.toContain('# Limits');
    });
  });

  describe('the operator tools (thin wrappers over the swarms service)', () => {
    it('starts a swarm and reports its ids and where to watch it', async () => {
      const out = await run('chat_swarm_start', { task: 'Review the plan', evidence: [{ title: 'PR #3', sourceUrl: 'https://forge.example/3', body: 'diff' }] });
      expect(out).toMatchObject({ status: 'ok', content: expect.stringContaining('op 22222222-2222-4222-8222-222222222222') });
      expect(out.content).toContain('http://127.0.0.1:18080/app');
      expect(fake.calls).toContain('start Review the plan');
    });

    it('waits, reports status and the transcript, and stops', async () => {
      const id = '11111111-1111-4111-8111-111111111111';
      expect((await run('chat_swarm_wait', { swarmId: id, timeoutS: 1 })).content).toContain('conclusion: all good');
      expect((await run('chat_swarm_status', {})).content).toContain('@s11111111-lead (lead): busy');
      expect((await run('chat_swarm_transcript', { swarmId: id })).content).toBe('Local Captain: kickoff\n  ↳ @s1-lead: on it');
      await run('chat_swarm_stop', { swarmId: id, reason: 'enough' });
      expect(fake.calls).toContain(`stop ${id} enough`);
    });

    it("reaches the swarms service as the turn's originating caller, or read-only as none", async () => {
      callers.length = 0;
      const operator = { subject: 'token:ops', kind: 'token' as const, scopes: ['read', 'operate'] as const, tokenId: '00000000-0000-4000-8000-000000000001' };
      await host.executeTool({ name: 'chat_swarm_stop', input: { swarmId: '11111111-1111-4111-8111-111111111111' }, surface: 'workflow', caller: operator });
      await run('chat_swarm_status', {});
      expect(callers).toEqual(['token:token:ops:read,operate', undefined]);
    });

    it('resets the managed server only with confirm: true', async () => {
      const dry = await run('chat_server_reset', {});
      expect(dry.content).toMatch(/^Nothing was reset\./);
      expect(fake.calls.filter((c) => c.startsWith('resetServer'))).toEqual([]);
      await run('chat_server_reset', { confirm: true });
      expect(fake.calls.filter((c) => c.startsWith('resetServer'))).toEqual(['resetServer true']);
    });
  });

  describe('the agent tools outside a swarm turn', () => {
    it('refuse to run without the turn context the engine sets, and take no agent from input', async () => {
      const out = await run('chat_post', { body: 'hello' });
      expect(out).toMatchObject({ isError: true, content: expect.stringContaining('works only inside a swarm agent\'s turn') });
      expect((await run('chat_post', { body: 'hello' }, { swarmTurn: 'forged-key' })).content).toContain('works only inside a swarm agent\'s turn');
      expect((await run('chat_post', { body: 'hello', agent: 'lead' })).status).toBe('invalid-input');
    });
  });

  it('renders a board of live swarms', async () => {
    await host.recomposeSnapshot('rib:swarm');
    const snap = await host.readSnapshot('rib:swarm');
    expect(snap?.payload).toContain('| Check A | RUNNING | 2 | 1 (1 busy) | @s11111111-lead | [#swarm-11111111](http://127.0.0.1:18080/app) |');
  });
});
