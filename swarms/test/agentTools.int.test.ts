import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRibHost, InMemorySnapshotStore, type RibHost } from '@keelson/host';
import { staticConfigPort } from '@keelson/host-doubles';
import { silentLogger } from '@keelson/service';
import swarmRib, { bindTurn, type RosterLine } from '@keelson/rib-swarm';
import { ClickClackClient, TurnSession } from '../src';
import { standin } from './support/standin';

/**
 * The agent tools against a real bus (the stand-in): the calling agent is the one the engine bound
 * to the turn context, posts are authored by that agent's own token, and a retried turn's posts are
 * not duplicated.
 */
describe('agent tools inside a swarm turn', () => {
  let s: Awaited<ReturnType<typeof standin>>;
  let host: RibHost;
  let owner: ClickClackClient;
  let ws: string;
  let channel: string;
  const agents: Record<string, { client: ClickClackClient; userId: string; handle: string }> = {};
  const announced: string[] = [];

  beforeAll(async () => {
    s = await standin();
    owner = new ClickClackClient({ url: s.url, token: await new ClickClackClient({ url: s.url }).magicSession() });
    ws = (await owner.listWorkspaces())[0]!.id;
    channel = (await owner.createChannel(ws, { name: 'swarm-tools' })).id;
    for (const name of ['lead', 'alice']) {
      const { bot, token } = await owner.createBot(ws, { displayName: name, handle: `stools-${name}`, scopes: ['bot:write'], tokenName: 't' });
      agents[name] = { client: owner.withToken(token.token), userId: bot.id, handle: bot.handle! };
    }
    host = await createRibHost({ available: { swarm: swarmRib }, env: {}, home: mkdtempSync(join(tmpdir(), 'keelson-swarm-tools-')), logger: silentLogger(), config: staticConfigPort({}), snapshotStore: new InMemorySnapshotStore() });
  });
  afterAll(async () => {
    await host?.dispose();
    await s?.cleanup();
  });

  const roster: RosterLine[] = [
    { id: 'lead', handle: 'stools-lead', role: 'lead', lead: true, writer: false, status: 'BUSY', finished: false },
    { id: 'alice', handle: 'stools-alice', role: 'checks A', lead: false, writer: false, status: 'IDLE', finished: false },
  ];
  const turn = (agentId: string, turnNo = 1) =>
    new TurnSession({
      swarmId: 'swarm-x',
      agentId,
      handle: agents[agentId]!.handle,
      turnNo,
      lead: agentId === 'lead',
      writer: false,
      writeMode: false,
      agent: agents[agentId]!.client,
      workspaceId: ws,
      channelId: channel,
      task: 'Check A',
      evidence: [{ title: 'Spec', sourceUrl: 'https://forge.example/spec', body: 'A must hold.' }],
      roster,
      announce: async (id) => void announced.push(id),
      onBusFailure: () => undefined,
    });
  const call = (name: string, input: unknown, turnContext: Record<string, string>) => host.executeTool({ name, input, surface: 'rib', callerRibId: 'swarm', turnContext });

  it('posts as the agent the turn context names (ClickClack stamps it), and announces the post before the tool returns', async () => {
    const session = turn('lead');
    const bound = bindTurn(session);
    const out = await call('chat_post', { body: '@stools-alice please check A' }, bound.turnContext);
    bound.unbind();
    const id = /posted (msg_\w+)/.exec(out.content)![1]!;
    expect((await owner.getMessage(id)).authorId).toBe(agents.lead!.userId);
    expect(announced).toContain(id);
    expect(session.posted).toEqual([id]);
  });

  it('replies to the root when given a reply, reads the thread, and never duplicates a retried turn\'s post', async () => {
    const root = (await agents.lead!.client.postMessage(channel, { body: 'root' })).message;
    const first = (await agents.lead!.client.replyInThread(root.id, { body: 'first reply' })).message;
    const attempt = () => {
      const session = turn('alice', 3);
      return { session, bound: bindTurn(session) };
    };
    const a = attempt();
    const replied = await call('chat_reply', { messageId: first.id, body: 'A holds' }, a.bound.turnContext);
    expect(replied.content).toContain(`in thread ${root.id}`);
    a.bound.unbind();
    // The same turn again (a retry after a crash): same nonce, same body, the same message back.
    const b = attempt();
    const again = await call('chat_reply', { messageId: root.id, body: 'A holds' }, b.bound.turnContext);
    expect(again.content).toContain('already posted; not duplicated');
    // The retried turn says it differently: the earlier post stands, nothing new appears.
    const c = attempt();
    const other = await call('chat_reply', { messageId: root.id, body: 'A holds, I think' }, c.bound.turnContext);
    expect(other.content).toContain('the earlier reply stands');
    const thread = await call('chat_read', { threadOf: first.id }, c.bound.turnContext);
    expect(thread.content.match(/A holds/g)).toHaveLength(1);
    expect((await owner.getThread(root.id)).replies.map((r) => r.body)).toEqual(['first reply', 'A holds']);
  });

  it('gives the roster and the evidence, and turns spawn / done / report into requests for the workflow', async () => {
    const lead = turn('lead', 2);
    const bound = bindTurn(lead);
    expect((await call('chat_roster', {}, bound.turnContext)).content).toBe('@stools-lead: lead [lead] busy (you)\n@stools-alice: checks A idle');
    expect((await call('chat_context', {}, bound.turnContext)).content).toBe('1. Spec <https://forge.example/spec> (12 characters)');
    expect((await call('chat_context', { item: 1 }, bound.turnContext)).content).toContain('A must hold.');
    await call('chat_spawn', { name: 'carol', role: 'checks C' }, bound.turnContext);
    expect((await call('chat_spawn', { name: 'dave', role: 'writes', writer: true }, bound.turnContext)).content).toContain('this swarm is not in write mode');
    expect((await call('chat_done', {}, bound.turnContext)).content).toContain('the lead ends the swarm with chat_report');
    await call('chat_report', { conclusion: 'A holds' }, bound.turnContext);
    bound.unbind();
    expect(lead.commands).toEqual([
      { kind: 'spawn', name: 'carol', role: 'checks C', writer: false },
      { kind: 'report', conclusion: 'A holds' },
    ]);
    const worker = turn('alice', 4);
    const wb = bindTurn(worker);
    expect((await call('chat_report', { conclusion: 'mine' }, wb.turnContext)).content).toContain('only the lead reports');
    await call('chat_done', { summary: 'checked' }, wb.turnContext);
    wb.unbind();
    expect(worker.commands).toEqual([{ kind: 'done', summary: 'checked' }]);
    // Once unbound, the turn context reaches nothing.
    expect((await call('chat_post', { body: 'late' }, wb.turnContext)).content).toContain('works only inside a swarm agent\'s turn');
  });
});
