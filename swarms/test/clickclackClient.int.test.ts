import { ClickClackClient, ClickClackError } from '../src/bus/clickclack';
import type { BusEvent } from '../src/bus/wire';
import { standin } from './support/standin';

describe('ClickClackClient against the stand-in', () => {
  let s: Awaited<ReturnType<typeof standin>>;
  let owner: ClickClackClient;
  let ws: string;
  let channel: string;

  beforeAll(async () => {
    s = await standin();
    owner = new ClickClackClient({ url: s.url, token: await new ClickClackClient({ url: s.url }).magicSession() });
    ws = (await owner.listWorkspaces())[0]!.id;
    channel = (await owner.createChannel(ws, { name: 'swarm-client' })).id;
  });
  afterAll(async () => {
    await s?.cleanup();
  });

  it('speaks as each bot with withToken: the server stamps the author', async () => {
    const { bot, token } = await owner.createBot(ws, { displayName: 'Alice', handle: 'c-alice', scopes: ['bot:write'], tokenName: 'keelson-swarm', setupNonce: 's1:alice' });
    const alice = owner.withToken(token.token);
    const { message } = await alice.postMessage(channel, { body: 'hi @c-alice', nonce: 's1:alice:t1:1' });
    expect(message.authorId).toBe(bot.id);
    expect(message.author).toMatchObject({ kind: 'bot', handle: 'c-alice' });
    expect((await owner.getMessage(message.id)).body).toBe('hi @c-alice');
  });

  it('reports a nonce replay as replayed, a nonce reused for another body as nonceConflict, and finds a message by nonce', async () => {
    const first = await owner.postMessage(channel, { body: 'same', nonce: 'op:1' });
    const again = await owner.postMessage(channel, { body: 'same', nonce: 'op:1' });
    expect([first.replayed, again.replayed, again.message.id]).toEqual([false, true, first.message.id]);
    const conflict = await owner.postMessage(channel, { body: 'other', nonce: 'op:1' }).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(ClickClackError);
    expect((conflict as ClickClackError).nonceConflict).toBe(true);
    expect((await owner.messageByNonce(ws, 'op:1'))?.id).toBe(first.message.id);
    expect(await owner.messageByNonce(ws, 'never')).toBeUndefined();
  });

  it('maps any 401 to credentialRevoked', async () => {
    const { token } = await owner.createBot(ws, { displayName: 'Gone', handle: 'c-gone', scopes: ['bot:write'], tokenName: 't' });
    await owner.revokeBotToken(token.id);
    const err = await owner.withToken(token.token).me().catch((e: unknown) => e);
    expect((err as ClickClackError).credentialRevoked).toBe(true);
    const down = await new ClickClackClient({ url: 'http://127.0.0.1:1' }).me().catch((e: unknown) => e);
    expect((down as ClickClackError).unreachable).toBe(true);
  });

  it('subscribes from the tail without replaying history, and reads 4001 for a bad cursor', async () => {
    const tail = await owner.tailCursor(ws);
    const seen: BusEvent[] = [];
    const sub = owner.subscribe(ws, tail, (e) => seen.push(e));
    await new Promise((r) => setTimeout(r, 200));
    const { message } = await owner.postMessage(channel, { body: 'live' });
    const reply = await owner.replyInThread(message.id, { body: 'threaded' });
    const deadline = Date.now() + 5000;
    while (seen.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    sub.close();
    expect(seen.map((e) => [e.type, e.payload.message_id ?? e.payload.root_message_id])).toEqual([
      ['message.created', message.id],
      ['thread.reply_created', reply.message.id],
      ['thread.state_updated', message.id],
    ]);
    const bad = owner.subscribe(ws, 'cur_bogus', () => undefined);
    expect((await bad.closed).code).toBe(4001);
  });

  it('reads a thread and channel pages', async () => {
    const { message } = await owner.postMessage(channel, { body: 'root for thread' });
    await owner.replyInThread(message.id, { body: 'r1' });
    await owner.replyInThread(message.id, { body: 'r2' });
    const thread = await owner.getThread(message.id, { latest: true, limit: 1 });
    expect(thread.replies.map((r) => r.body)).toEqual(['r2']);
    const page = await owner.listMessages(channel, { afterSeq: 0, limit: 200 });
    expect(page.messages.every((m) => m.threadRootId === m.id)).toBe(true);
    expect(page.messages.find((m) => m.id === message.id)?.replyCount).toBe(2);
  });
});
