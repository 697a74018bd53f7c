import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { SCOPE_BUNDLES, STANDIN_BIN as BIN } from '@keelson/clickclack-standin';
import { call, getWithHost, openSocket, ownerSession, standin } from './support/standin';

const run = promisify(execFile);

/**
 * The stand-in's own protocol rules, each as SWARM.md records it of a real ClickClack server. These
 * are the rules the swarm's client and engine rely on; where SWARM.md is silent the stand-in has no
 * behaviour to test.
 */
describe('the ClickClack stand-in speaks the recorded wire protocol', () => {
  let s: Awaited<ReturnType<typeof standin>>;
  let base: string;
  let owner: string;
  let ws: string;

  beforeAll(async () => {
    s = await standin();
    base = s.url;
    owner = await ownerSession(base);
    ws = ((await call(base, 'GET', '/api/workspaces', { token: owner })).body.workspaces as { id: string }[])[0]!.id;
  });
  afterAll(async () => {
    await s?.cleanup();
  });

  const bot = async (handle: string, scopes = ['bot:write'], extra: Record<string, unknown> = {}) => {
    const r = await call(base, 'POST', `/api/workspaces/${ws}/bots`, { token: owner, body: { display_name: `Agent ${handle}`, handle, scopes, token_name: 'keelson-swarm', initial_token: true, ...extra } });
    expect(r.status).toBeLessThan(300);
    return { id: (r.body.bot as { id: string }).id, tokenId: (r.body.bot_token as { id: string }).id, token: (r.body.bot_token as { token: string }).token, raw: r.body };
  };
  const channel = async (name: string) => ((await call(base, 'POST', `/api/workspaces/${ws}/channels`, { token: owner, body: { name } })).body.channel as { id: string }).id;

  describe('process and health', () => {
    it('answers /healthz and /readyz without auth', async () => {
      expect((await call(base, 'GET', '/healthz')).body).toEqual({ status: 'ok' });
      expect((await call(base, 'GET', '/readyz')).body).toEqual({ status: 'ready' });
    });

    it('echoes a safe X-Correlation-ID and mints one otherwise', async () => {
      expect((await call(base, 'GET', '/healthz', { headers: { 'x-correlation-id': 'swarm-demo-1' } })).headers.get('x-correlation-id')).toBe('swarm-demo-1');
      const minted = (await call(base, 'GET', '/healthz', { headers: { 'x-correlation-id': 'bad id <script>' } })).headers.get('x-correlation-id');
      expect(minted).toMatch(/^cor_[0-9a-z]{26}$/);
    });

    it('prints serve flags by release: --access-log only from 0.5.0, and an unknown flag exits 2', async () => {
      const current = await run(BIN, ['serve', '-h']);
      expect(current.stdout).toMatch(/--access-log/);
      const old = await run(BIN, ['serve', '-h'], { env: { ...process.env, KEELSON_CLICKCLACK_STANDIN_VERSION: '0.4.0' } });
      expect(old.stdout).toMatch(/--dev-bootstrap/);
      expect(old.stdout).not.toMatch(/access-log/);
      await expect(run(BIN, ['serve', '--access-log', 'errors'], { env: { ...process.env, KEELSON_CLICKCLACK_STANDIN_VERSION: '0.4.0' } })).rejects.toMatchObject({
        code: 2,
        stderr: expect.stringContaining('flag provided but not defined: -access-log'),
      });
      expect((await run(BIN, ['version'])).stdout).toMatch(/^0\.7\.0 /);
    }, 60_000);
  });

  describe('auth', () => {
    it('trusts a loopback request without credentials as the first user, and nobody off loopback', async () => {
      const me = await call(base, 'GET', '/api/me');
      expect(me.body.user).toMatchObject({ kind: 'human', display_name: 'Local Captain', email: 'local@clickclack.chat' });
      const remote = await getWithHost(base, '/api/me', 'chat.example.com');
      expect(remote).toMatchObject({ status: 401, body: { error: 'authentication required' } });
    });

    it('mints an owner session through the magic link: mgt_ then sst_, 15 minutes then 30 days', async () => {
      const requested = await call(base, 'POST', '/api/auth/magic/request', { body: { email: 'local@clickclack.chat' } });
      expect(requested.status).toBe(201);
      expect(requested.body.token).toMatch(/^mgt_/);
      const ttl = Date.parse((requested.body.magic_link as { expires_at: string }).expires_at) - Date.now();
      expect(ttl).toBeGreaterThan(14 * 60_000);
      expect(ttl).toBeLessThanOrEqual(15 * 60_000);
      const consumed = await call(base, 'POST', '/api/auth/magic/consume', { body: { token: requested.body.token } });
      expect(consumed.body.token).toMatch(/^sst_/);
      expect(Date.parse((consumed.body.session as { expires_at: string }).expires_at) - Date.now()).toBeGreaterThan(29 * 24 * 3600_000);
      const plain = await call(base, 'POST', '/api/auth/magic/consume', { body: JSON.stringify({ token: 'mgt_x' }), headers: { 'content-type': 'text/plain' } });
      expect(plain.status).toBeGreaterThanOrEqual(400);
    });

    it('refuses a magic link without dev auth (501)', async () => {
      const closed = await standin({ devBootstrap: false });
      try {
        expect((await call(closed.url, 'POST', '/api/auth/magic/request', { body: { email: 'local@clickclack.chat' } })).status).toBe(501);
        expect((await call(closed.url, 'GET', '/api/me')).status).toBe(401);
      } finally {
        await closed.cleanup();
      }
    });

    it('bootstraps an owner and signs it in without dev auth: `admin bootstrap`, `admin magic-link create` on the data directory, then consume', async () => {
      const closed = await standin({ devBootstrap: false });
      try {
        const email = 'Owner@Example.test';
        const boot = await run(BIN, ['admin', 'bootstrap', '-data', closed.dataDir, '-email', email, '-name', 'Owner']);
        const userId = /usr_[A-Za-z0-9]+/.exec(boot.stdout)?.[0];
        expect(userId).toBeDefined();
        // A second bootstrap finds the same owner, never a second one.
        expect((await run(BIN, ['admin', 'bootstrap', '--data', closed.dataDir, '--email', email])).stdout).toContain(userId!);
        // Written after the server read its data: the server still finds the link.
        const link = (await run(BIN, ['admin', 'magic-link', 'create', '-data', closed.dataDir, '-email', email])).stdout.trim();
        expect(link).toMatch(/^mgt_/);
        const consumed = await call(closed.url, 'POST', '/api/auth/magic/consume', { body: { token: link } });
        expect(consumed.status).toBe(200);
        const me = await call(closed.url, 'GET', '/api/me', { token: consumed.body.token as string });
        expect(me.body.user).toMatchObject({ id: userId, kind: 'human' });
        // One use only.
        expect((await call(closed.url, 'POST', '/api/auth/magic/consume', { body: { token: link } })).status).toBe(401);
        // Unknown users and bad flags fail with a message, nothing written.
        await expect(run(BIN, ['admin', 'magic-link', 'create', '-data', closed.dataDir, '-email', 'nobody@example.test'])).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('no user with email') });
        await expect(run(BIN, ['admin', 'bootstrap', '-data', closed.dataDir, '-email', 'not-an-email'])).rejects.toMatchObject({ code: 1 });
        await expect(run(BIN, ['admin', 'user', 'create'])).rejects.toMatchObject({ code: 2 });
      } finally {
        await closed.cleanup();
      }
    });

    it('answers a bad bearer 401 "sql: no rows in result set" and never falls through to the loopback owner', async () => {
      for (const token of ['ccb_nope', 'sst_nope', 'anything']) {
        expect(await call(base, 'GET', '/api/me', { token })).toMatchObject({ status: 401, body: { error: 'sql: no rows in result set' } });
      }
    });
  });

  describe('bots and tokens', () => {
    it('creates a service bot with a bot:write token expanded to exactly the observed scopes', async () => {
      const alice = await bot('alice');
      expect(alice.token).toMatch(/^ccb_/);
      expect(alice.tokenId).toMatch(/^btok_/);
      expect((alice.raw.bot_token as { scopes: string[] }).scopes.join(' ')).toBe(
        'channels:read commands:write dms:read dms:write messages:read messages:write profile:read realtime:read threads:read threads:write uploads:write workspaces:read',
      );
      expect(SCOPE_BUNDLES['bot:admin']).toContain('channels:write');
      const me = await call(base, 'GET', '/api/me', { token: alice.token });
      expect(me.body.user).toMatchObject({ kind: 'bot', handle: 'alice', owner_user_id: null });
    });

    it('enforces the handle pattern and global uniqueness', async () => {
      expect((await call(base, 'POST', `/api/workspaces/${ws}/bots`, { token: owner, body: { display_name: 'X', handle: 'Bad Handle', scopes: ['bot:write'], token_name: 't' } })).status).toBe(400);
      await bot('unique-one');
      expect((await call(base, 'POST', `/api/workspaces/${ws}/bots`, { token: owner, body: { display_name: 'X', handle: 'unique-one', scopes: ['bot:write'], token_name: 't' } })).status).toBe(409);
    });

    it('refuses bot tokens creating bots (403) and bot:write creating channels (403 missing channels:write)', async () => {
      const b = await bot('creator');
      expect(await call(base, 'POST', `/api/workspaces/${ws}/bots`, { token: b.token, body: { display_name: 'Y', handle: 'yy', scopes: ['bot:write'], token_name: 't' } })).toMatchObject({
        status: 403,
        body: { error: 'bot tokens cannot create bots' },
      });
      expect(await call(base, 'POST', `/api/workspaces/${ws}/channels`, { token: b.token, body: { name: 'nope' } })).toMatchObject({
        status: 403,
        body: { error: 'bot token is missing scope channels:write' },
      });
    });

    it('makes bot creation idempotent by setup_nonce: the same bot and token id, a rotated plaintext', async () => {
      const first = await bot('nonced', ['bot:write'], { setup_nonce: 'swarm-x:lead' });
      const again = await call(base, 'POST', `/api/workspaces/${ws}/bots`, { token: owner, body: { display_name: 'Agent nonced', handle: 'nonced', scopes: ['bot:write'], token_name: 'keelson-swarm', setup_nonce: 'swarm-x:lead' } });
      expect((again.body.bot as { id: string }).id).toBe(first.id);
      const rotated = again.body.bot_token as { id: string; token: string };
      expect(rotated.id).toBe(first.tokenId);
      expect(rotated.token).not.toBe(first.token);
      expect((await call(base, 'GET', '/api/me', { token: first.token })).status).toBe(401);
      expect((await call(base, 'GET', '/api/me', { token: rotated.token })).status).toBe(200);
      const more = await call(base, 'POST', `/api/workspaces/${ws}/bots/${first.id}/tokens`, { token: owner, body: { name: 'k1', scopes: ['bot:write'], setup_nonce: 'k1' } });
      const moreAgain = await call(base, 'POST', `/api/workspaces/${ws}/bots/${first.id}/tokens`, { token: owner, body: { name: 'k1', scopes: ['bot:write'], setup_nonce: 'k1' } });
      expect(more.status).toBe(201);
      expect((moreAgain.body.bot_token as { id: string }).id).toBe((more.body.bot_token as { id: string }).id);
    });

    it('revokes a token: its next request is 401 "sql: no rows in result set", and the listing shows revoked_at', async () => {
      const b = await bot('revokee');
      const revoked = await call(base, 'POST', `/api/bot-tokens/${b.tokenId}/revoke`, { token: owner, body: {} });
      expect((revoked.body.bot_token as { revoked_at: string | null }).revoked_at).toEqual(expect.any(String));
      expect(await call(base, 'GET', '/api/me', { token: b.token })).toMatchObject({ status: 401, body: { error: 'sql: no rows in result set' } });
      const listing = await call(base, 'GET', `/api/workspaces/${ws}/bots`, { token: owner });
      const tokens = (listing.body.bots as { handle: string; tokens: { id: string; revoked_at: string | null }[] }[]).find((x) => x.handle === 'revokee')!.tokens;
      expect(tokens).toEqual([expect.objectContaining({ id: b.tokenId, revoked_at: expect.any(String) })]);
    });

    it('deletes a bot: every token revoked, its handle freed, its old messages keep their author', async () => {
      const b = await bot('leaver');
      const ch = await channel('leaving');
      const posted = await call(base, 'POST', `/api/channels/${ch}/messages`, { token: b.token, body: { body: 'bye' } });
      const deleted = await call(base, 'DELETE', `/api/bots/${b.id}`, { token: owner });
      expect(deleted.body.deleted_bot).toMatchObject({ id: b.id, former_handle: 'leaver', deleted_at: expect.any(String) });
      expect((await call(base, 'GET', '/api/me', { token: b.token })).status).toBe(401);
      const message = await call(base, 'GET', `/api/messages/${(posted.body.message as { id: string }).id}`, { token: owner });
      expect((message.body.message as { author_id: string; author: { former_handle: string } }).author).toMatchObject({ id: b.id, former_handle: 'leaver' });
      await bot('leaver');
    });

    it('binds a bot token to its workspace (403 elsewhere)', async () => {
      const other = await call(base, 'POST', '/api/workspaces', { token: owner, body: { name: 'Other', slug: 'other' } });
      const b = await bot('bound');
      expect(await call(base, 'GET', `/api/workspaces/${(other.body.workspace as { id: string }).id}/channels`, { token: b.token })).toMatchObject({
        status: 403,
        body: { error: 'bot token cannot access this workspace' },
      });
    });
  });

  describe('messages, nonces and threads', () => {
    it('posts with the author stamped from the token and returns the message and its event', async () => {
      const alice = await bot('poster');
      const ch = await channel('posting');
      const r = await call(base, 'POST', `/api/channels/${ch}/messages`, { token: alice.token, body: { body: 'hello @poster', nonce: 'n-1' }, headers: { 'x-correlation-id': 'swarm-demo-1' } });
      expect(r.status).toBe(201);
      const message = r.body.message as Record<string, unknown>;
      expect(message).toMatchObject({ author: { kind: 'bot', handle: 'poster' }, channel_seq: 1 });
      expect(message.thread_root_id).toBe(message.id);
      expect(r.body.event).toMatchObject({
        type: 'message.created',
        channel_id: ch,
        seq: 1,
        cursor: expect.stringMatching(/^cur_[0-9a-z]{26}$/),
        payload: { message_id: message.id, author_id: alice.id, nonce: 'n-1', correlation_id: 'swarm-demo-1' },
        mentioned_user_ids: [alice.id],
      });
    });

    it('replays a nonce with the same body as 200 and event null, refuses another body (400), and finds it by nonce for its author only', async () => {
      const a = await bot('noncer');
      const b = await bot('other-noncer');
      const ch = await channel('nonces');
      const first = await call(base, 'POST', `/api/channels/${ch}/messages`, { token: a.token, body: { body: 'once', nonce: 'swarm1:a:t1:1' } });
      const replay = await call(base, 'POST', `/api/channels/${ch}/messages`, { token: a.token, body: { body: 'once', nonce: 'swarm1:a:t1:1' } });
      expect(replay.status).toBe(200);
      expect(replay.body.event).toBeNull();
      expect((replay.body.message as { id: string }).id).toBe((first.body.message as { id: string }).id);
      expect(await call(base, 'POST', `/api/channels/${ch}/messages`, { token: a.token, body: { body: 'twice', nonce: 'swarm1:a:t1:1' } })).toMatchObject({
        status: 400,
        body: { error: 'client nonce was already used for a different message' },
      });
      // Scoped to the author: another bot may use the same nonce.
      expect((await call(base, 'POST', `/api/channels/${ch}/messages`, { token: b.token, body: { body: 'mine', nonce: 'swarm1:a:t1:1' } })).status).toBe(201);
      const found = await call(base, 'GET', `/api/messages/by-nonce?workspace_id=${ws}&nonce=${encodeURIComponent('swarm1:a:t1:1')}`, { token: a.token });
      expect((found.body.message as { body: string }).body).toBe('once');
      expect((await call(base, 'POST', `/api/channels/${ch}/messages`, { token: a.token, body: { body: 'x', nonce: 'n'.repeat(129) } })).status).toBe(400);
    });

    it('threads replies to the root only: thread.reply_created has no author and no seq; a reply to a reply is refused', async () => {
      const a = await bot('threader');
      const ch = await channel('threads');
      const root = (await call(base, 'POST', `/api/channels/${ch}/messages`, { token: a.token, body: { body: 'root' } })).body.message as { id: string };
      const reply = await call(base, 'POST', `/api/messages/${root.id}/thread/replies`, { token: owner, body: { body: 'on it', nonce: 'r1' } });
      expect(reply.status).toBe(201);
      const [created, state] = reply.body.events as Record<string, unknown>[];
      expect(created).toMatchObject({ type: 'thread.reply_created', payload: { message_id: (reply.body.message as { id: string }).id, root_message_id: root.id, nonce: 'r1' } });
      expect((created!.payload as Record<string, unknown>).author_id).toBeUndefined();
      expect(created!.seq).toBeNull();
      expect(state).toMatchObject({ type: 'thread.state_updated', payload: { root_message_id: root.id } });
      expect(await call(base, 'POST', `/api/messages/${(reply.body.message as { id: string }).id}/thread/replies`, { token: owner, body: { body: 'nested' } })).toMatchObject({
        status: 400,
        body: { error: 'nested thread replies are not supported' },
      });
      const thread = await call(base, 'GET', `/api/messages/${root.id}/thread`, { token: a.token });
      expect((thread.body.replies as { body: string }[]).map((r) => r.body)).toEqual(['on it']);
      const roots = await call(base, 'GET', `/api/channels/${ch}/messages?after_seq=0&limit=50`, { token: a.token });
      expect((roots.body.messages as { body: string; thread_state: { reply_count: number } }[]).map((m) => [m.body, m.thread_state.reply_count])).toEqual([['root', 1]]);
    });

    it('pages channel roots by sequence, the anchors mutually exclusive', async () => {
      const ch = await channel('paging');
      for (let i = 1; i <= 5; i++) await call(base, 'POST', `/api/channels/${ch}/messages`, { token: owner, body: { body: `m${i}` } });
      const page = await call(base, 'GET', `/api/channels/${ch}/messages?after_seq=2&limit=2`, { token: owner });
      expect(page.body).toMatchObject({ oldest_seq: 3, newest_seq: 4, has_older: true, has_newer: true });
      expect((await call(base, 'GET', `/api/channels/${ch}/messages?mode=latest&limit=2`, { token: owner })).body).toMatchObject({ oldest_seq: 4, newest_seq: 5, has_newer: false });
      expect((await call(base, 'GET', `/api/channels/${ch}/messages?after_seq=1&before_seq=4`, { token: owner })).status).toBe(400);
    });

    it('refuses a JSON body over 1 MiB (413)', async () => {
      const ch = await channel('big');
      expect((await call(base, 'POST', `/api/channels/${ch}/messages`, { token: owner, body: { body: 'x'.repeat(1024 * 1024 + 10) } })).status).toBe(413);
    });
  });

  describe('realtime', () => {
    it('pulls events after a cursor with include_tail captured before the page; a limit outside 1-500 is 200', async () => {
      const ch = await channel('pulling');
      const first = (await call(base, 'POST', `/api/channels/${ch}/messages`, { token: owner, body: { body: 'p1' } })).body.event as { cursor: string };
      await call(base, 'POST', `/api/channels/${ch}/messages`, { token: owner, body: { body: 'p2' } });
      const pulled = await call(base, 'GET', `/api/realtime/events?workspace_id=${ws}&after_cursor=${first.cursor}&include_tail=true`, { token: owner });
      const events = pulled.body.events as { cursor: string; type: string }[];
      expect(events.map((e) => e.type)).toEqual(['message.created']);
      expect(pulled.body.tail_cursor).toBe(events[0]!.cursor);
      const all = await call(base, 'GET', `/api/realtime/events?workspace_id=${ws}&limit=9999`, { token: owner });
      expect((all.body.events as unknown[]).length).toBeLessThanOrEqual(200);
      const cursors = (all.body.events as { cursor: string }[]).map((e) => e.cursor);
      expect([...cursors].sort()).toEqual(cursors);
    });

    it('replays after a cursor over the subprotocol bearer (echoed), then stays live, in order', async () => {
      const bob = await bot('listener');
      const ch = await channel('live');
      const m1 = (await call(base, 'POST', `/api/channels/${ch}/messages`, { token: owner, body: { body: 'one' } })).body.event as { cursor: string };
      const root = (await call(base, 'POST', `/api/channels/${ch}/messages`, { token: owner, body: { body: 'two' } })).body.message as { id: string };
      await call(base, 'POST', `/api/messages/${root.id}/thread/replies`, { token: owner, body: { body: 'two.1' } });
      const socket = openSocket(base, { workspace_id: ws, after_cursor: m1.cursor }, { protocol: `clickclack.bearer.${bob.token}` });
      await socket.opened;
      expect(socket.protocol()).toBe(`clickclack.bearer.${bob.token}`);
      await socket.waitFor(3);
      await call(base, 'POST', `/api/channels/${ch}/messages`, { token: owner, body: { body: 'three' } });
      const events = await socket.waitFor(4);
      expect(events.map((e) => e.type)).toEqual(['message.created', 'thread.reply_created', 'thread.state_updated', 'message.created']);
      const cursors = events.map((e) => e.cursor as string);
      expect([...cursors].sort()).toEqual(cursors);
      socket.close();
    });

    it('closes 4001 "resync required" for an unknown cursor', async () => {
      const socket = openSocket(base, { workspace_id: ws, after_cursor: 'cur_00000000000000000000000000' }, { header: owner });
      expect(await socket.closed).toEqual({ code: 4001, reason: 'realtime replay limit exceeded; resync required' });
    });

    it('replays the whole log without a cursor', async () => {
      const { events } = (await call(base, 'GET', `/api/realtime/events?workspace_id=${ws}&limit=500`, { token: owner })).body as { events: unknown[] };
      const socket = openSocket(base, { workspace_id: ws }, { header: owner });
      expect((await socket.waitFor(events.length)).length).toBe(events.length);
      socket.close();
    });

    it('closes a revoked token\'s socket with 1008 (from 0.4.0) and a deleted bot\'s too', async () => {
      const b = await bot('closing');
      const socket = openSocket(base, { workspace_id: ws, after_cursor: (await call(base, 'GET', `/api/realtime/events?workspace_id=${ws}&limit=1&include_tail=true`, { token: owner })).body.tail_cursor as string }, { header: b.token });
      await socket.opened;
      await call(base, 'POST', `/api/bot-tokens/${b.tokenId}/revoke`, { token: owner, body: {} });
      expect((await socket.closed).code).toBe(1008);
      const c = await bot('deleting');
      const other = openSocket(base, { workspace_id: ws }, { header: c.token });
      await other.opened;
      await call(base, 'DELETE', `/api/bots/${c.id}`, { token: owner });
      expect((await other.closed).code).toBe(1008);
    });

    it('refuses a socket without realtime:read or membership before upgrading', async () => {
      const socket = openSocket(base, { workspace_id: ws }, { header: 'ccb_revoked' });
      expect(await socket.closed).toEqual({ code: 0, reason: '401' });
    });
  });

  it('keeps everything across a restart on the same data directory: sessions, cursors and replay', async () => {
    const first = await standin();
    const session = await ownerSession(first.url);
    const wsp = ((await call(first.url, 'GET', '/api/workspaces', { token: session })).body.workspaces as { id: string }[])[0]!.id;
    const ch = ((await call(first.url, 'POST', `/api/workspaces/${wsp}/channels`, { token: session, body: { name: 'durable' } })).body.channel as { id: string }).id;
    const m1 = (await call(first.url, 'POST', `/api/channels/${ch}/messages`, { token: session, body: { body: 'before' } })).body.event as { cursor: string };
    await call(first.url, 'POST', `/api/channels/${ch}/messages`, { token: session, body: { body: 'after 1' } });
    const before = (await call(first.url, 'GET', `/api/realtime/events?workspace_id=${wsp}&after_cursor=${m1.cursor}`, { token: session })).body.events;
    await first.stop(100);
    const second = await standin({ dataDir: first.dataDir });
    try {
      expect((await call(second.url, 'GET', '/api/me', { token: session })).status).toBe(200);
      expect((await call(second.url, 'GET', `/api/realtime/events?workspace_id=${wsp}&after_cursor=${m1.cursor}`, { token: session })).body.events).toEqual(before);
      const next = (await call(second.url, 'POST', `/api/channels/${ch}/messages`, { token: session, body: { body: 'after restart' } })).body as { message: { channel_seq: number }; event: { cursor: string } };
      expect(next.message.channel_seq).toBe(3);
      expect(next.event.cursor > (before as { cursor: string }[])[0]!.cursor).toBe(true);
    } finally {
      await second.cleanup();
      await first.cleanup();
    }
  });
});
