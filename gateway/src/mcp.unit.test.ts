import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jsonRpcErrorBody } from '@keelson/service';
import { mcpScopes } from './mcpProxy';
import { mcpBridgeSettings } from './mcpStdio';

describe('the scope an MCP request needs at the gateway', () => {
  it('is write or operate when any message calls a tool, read for everything else', () => {
    expect(mcpScopes([{ method: 'tools/call' }])).toEqual([['write'], ['operate']]);
    expect(mcpScopes([{ method: 'tools/list' }, { method: 'tools/call' }])).toEqual([['write'], ['operate']]);
    expect(mcpScopes([{ method: 'initialize' }, { method: 'notifications/initialized' }, { method: 'tools/list' }, { method: 'ping' }])).toEqual([['read']]);
    // A response (no method) or a GET without a body needs only read.
    expect(mcpScopes([{}])).toEqual([['read']]);
    expect(mcpScopes([])).toEqual([['read']]);
  });

  it('refuses as a JSON-RPC error carrying the registry code and status', () => {
    expect(JSON.parse(jsonRpcErrorBody({ status: 403, message: 'no', code: 'FORBIDDEN', data: { requiredScopes: [['write']] } }))).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000, message: 'no', data: { code: 'FORBIDDEN', status: 403, requiredScopes: [['write']] } },
    });
    expect(JSON.parse(jsonRpcErrorBody({ status: 400, message: 'bad', code: 'BAD_REQUEST', rpcCode: -32700 })).error.code).toBe(-32700);
  });
});

describe('where npm run mcp connects and as whom', () => {
  let home: string;
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'keelson-mcp-settings-'));
  });
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  it('takes KEELSON_MCP_URL and KEELSON_TOKEN as given', () => {
    const settings = mcpBridgeSettings({ KEELSON_MCP_URL: 'https://mesh.example/mcp', KEELSON_TOKEN: 'kmt_x', KEELSON_HOME: home });
    expect({ url: settings.url.href, token: settings.token }).toEqual({ url: 'https://mesh.example/mcp', token: 'kmt_x' });
  });

  it("defaults to the local gateway's port and the admin token in KEELSON_HOME (empty variables read as unset)", () => {
    writeFileSync(join(home, 'token'), 'kmt_from_file\n');
    const settings = mcpBridgeSettings({ KEELSON_HOME: home, KEELSON_GATEWAY_PORT: '4100', KEELSON_TOKEN: '' });
    expect({ url: settings.url.href, token: settings.token }).toEqual({ url: 'http://127.0.0.1:4100/mcp', token: 'kmt_from_file' });
    expect(mcpBridgeSettings({ KEELSON_HOME: home }).url.href).toBe('http://127.0.0.1:4000/mcp');
  });

  it("dials the local gateway over HTTPS when it serves TLS itself, trusting exactly its certificate (KEELSON_TLS_CERT)", () => {
    writeFileSync(join(home, 'cert.pem'), 'the gateway certificate');
    const settings = mcpBridgeSettings({ KEELSON_HOME: home, KEELSON_TOKEN: 'kmt_x', KEELSON_TLS_CERT: join(home, 'cert.pem') });
    expect({ url: settings.url.href, pinned: settings.pinnedCert?.toString() }).toEqual({ url: 'https://127.0.0.1:4000/mcp', pinned: 'the gateway certificate' });
    // An explicit URL is dialled as given, with the system's trust.
    expect(mcpBridgeSettings({ KEELSON_MCP_URL: 'https://mesh.example/mcp', KEELSON_TOKEN: 'kmt_x', KEELSON_TLS_CERT: join(home, 'cert.pem') }).pinnedCert).toBeUndefined();
    expect(() => mcpBridgeSettings({ KEELSON_TOKEN: 'kmt_x', KEELSON_TLS_CERT: join(home, 'nope.pem') })).toThrow(/^KEELSON_TLS_CERT=.*nope\.pem cannot be read \(ENOENT\)/);
  });

  it('says what to do when there is no token', () => {
    expect(() => mcpBridgeSettings({ KEELSON_HOME: home })).toThrow(`no KEELSON_TOKEN and no token file ${home}/token (ENOENT): start the mesh (npm start) or set KEELSON_TOKEN`);
    writeFileSync(join(home, 'token'), '  \n');
    expect(() => mcpBridgeSettings({ KEELSON_HOME: home })).toThrow(`${home}/token is empty`);
    expect(() => mcpBridgeSettings({ KEELSON_HOME: home, KEELSON_MCP_URL: 'not a url', KEELSON_TOKEN: 't' })).toThrow();
  });
});
