import { createHash } from 'node:crypto';
import type { RouteHandler } from '@keelson/service';

const style = `
:root{color-scheme:light dark;--line:#8884;--accent:#2f6fde}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,sans-serif;display:grid;grid-template-columns:16rem 1fr 1fr;height:100vh}
aside,main,section{padding:.75rem;overflow:auto;border-right:1px solid var(--line)}
h1{font-size:1rem;margin:0 0 .5rem}h2{font-size:.8rem;text-transform:uppercase;opacity:.7;margin:1rem 0 .25rem}
ul{list-style:none;margin:0;padding:0}li button{all:unset;cursor:pointer;font-family:ui-monospace,monospace;font-size:12px}
li button:hover{color:var(--accent)}li small{display:block;opacity:.65;margin:0 0 .35rem}
main{display:flex;flex-direction:column;gap:.5rem}label{font-size:.8rem;opacity:.7}
textarea,pre{font:12px/1.4 ui-monospace,monospace;width:100%;margin:0;border:1px solid var(--line);border-radius:4px;padding:.5rem;background:transparent;color:inherit}
textarea{resize:vertical}#query{flex:1;min-height:12rem}#variables{height:6rem}
.bar{display:flex;gap:.5rem;align-items:center}
.bar button{padding:.35rem .9rem;border-radius:4px;border:1px solid var(--accent);background:var(--accent);color:#fff;cursor:pointer}
.bar button.quiet{background:transparent;color:inherit;border-color:var(--line)}
#status{font-size:.8rem;opacity:.7}pre{white-space:pre-wrap;min-height:100%}
`;

const script = `
const $ = (id) => document.getElementById(id);
const endpoint = new URL('/graphql', location.href);
const wsEndpoint = new URL(endpoint); wsEndpoint.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
let socket = null;
// The start-up URL carries the token in its fragment (never sent to a server); keep it for this tab
// and drop it from the address bar.
const fromFragment = new URLSearchParams(location.hash.slice(1)).get('token');
if (fromFragment) { sessionStorage.setItem('keelson-token', fromFragment); history.replaceState(null, '', location.pathname + location.search); }
const token = () => sessionStorage.getItem('keelson-token');
const authHeaders = () => (token() ? { authorization: 'Bearer ' + token() } : {});
const show = (value) => { $('result').textContent = typeof value === 'string' ? value : JSON.stringify(value, null, 2); };
const status = (text) => { $('status').textContent = text; };
async function post(query, variables) {
  const res = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', 'apollo-require-preflight': 'true', ...authHeaders() }, body: JSON.stringify({ query, variables }) });
  return { status: res.status, body: await res.json() };
}
function stop() { if (socket) { socket.close(1000); socket = null; } $('stop').hidden = true; }
function subscribe(query, variables) {
  stop();
  const events = [];
  socket = new WebSocket(wsEndpoint, 'graphql-transport-ws');
  $('stop').hidden = false;
  socket.onopen = () => socket.send(JSON.stringify({ type: 'connection_init', payload: token() ? { authorization: 'Bearer ' + token() } : {} }));
  socket.onmessage = ({ data }) => {
    const msg = JSON.parse(data);
    if (msg.type === 'connection_ack') { socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query, variables } })); status('subscribed'); }
    else if (msg.type === 'next') { events.unshift(msg.payload); show(events); status(events.length + ' event(s)'); }
    else if (msg.type === 'error') { show(msg.payload); status('rejected'); stop(); }
    else if (msg.type === 'complete') { status('complete after ' + events.length + ' event(s)'); stop(); }
    else if (msg.type === 'ping') socket.send(JSON.stringify({ type: 'pong' }));
  };
  socket.onclose = (e) => { if (socket) status('closed ' + e.code + (e.reason ? ': ' + e.reason : '')); socket = null; $('stop').hidden = true; };
}
async function run() {
  const query = $('query').value;
  let variables;
  try { variables = $('variables').value.trim() ? JSON.parse($('variables').value) : undefined; }
  catch (e) { show('variables are not valid JSON: ' + e.message); return; }
  if (/^\\s*(#.*\\n\\s*)*subscription\\b/.test(query)) return subscribe(query, variables);
  stop(); status('running...');
  const started = performance.now();
  try { const { status: code, body } = await post(query, variables); show(body); status('HTTP ' + code + ' in ' + Math.round(performance.now() - started) + ' ms'); }
  catch (e) { show(String(e)); status('failed'); }
}
function skeleton(kind, field) {
  const args = field.args.filter((a) => a.type.kind === 'NON_NULL').map((a) => a.name + ': ');
  const call = field.name + (args.length ? '(' + args.join(', ') + ')' : '');
  let t = field.type; while (t.ofType) t = t.ofType;
  const leaf = t.kind === 'SCALAR' || t.kind === 'ENUM';
  return kind + ' {\\n  ' + call + (leaf ? '' : ' {\\n    __typename\\n  }') + '\\n}\\n';
}
async function loadRoots() {
  const typeRef = 'name kind ofType { name kind ofType { name kind ofType { name kind } } }';
  const root = 'fields { name description args { name type { ' + typeRef + ' } } type { ' + typeRef + ' } }';
  const { body } = await post('{ __schema { queryType { ' + root + ' } mutationType { ' + root + ' } subscriptionType { ' + root + ' } } }');
  if (!body.data) { $('roots').textContent = (body.errors && body.errors[0] && body.errors[0].message) || 'introspection failed'; if (!token()) $('roots').textContent += ' — open the URL npm start printed (it carries your token after #token=)'; return; }
  $('roots').textContent = '';
  for (const [kind, type] of [['query', body.data.__schema.queryType], ['mutation', body.data.__schema.mutationType], ['subscription', body.data.__schema.subscriptionType]]) {
    if (!type) continue;
    const h = document.createElement('h2'); h.textContent = kind; $('roots').append(h);
    const list = document.createElement('ul');
    for (const field of type.fields) {
      const li = document.createElement('li'); const b = document.createElement('button');
      b.textContent = field.name; b.title = 'insert a ' + kind;
      b.onclick = () => { $('query').value = skeleton(kind, field); $('query').focus(); };
      li.append(b);
      if (field.description) { const s = document.createElement('small'); s.textContent = field.description; li.append(s); }
      list.append(li);
    }
    $('roots').append(list);
  }
}
$('run').onclick = run;
$('stop').onclick = () => { stop(); status('stopped'); };
document.addEventListener('keydown', (e) => { if ((e.ctrlKey || e.metaKey) && e.key === 'Enter') run(); });
loadRoots().catch((e) => { $('roots').textContent = String(e); });
`;

function page(introspection: boolean): string {
  const roots = introspection ? 'loading…' : 'Introspection is served on loopback only.';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Keelson Mesh explorer</title><style>${style}</style></head>
<body>
<aside><h1>Keelson Mesh</h1><div id="roots">${roots}</div></aside>
<main>
<label for="query">Operation (Ctrl+Enter runs; a subscription streams over WebSocket)</label>
<textarea id="query" spellcheck="false">{\n  __typename\n}\n</textarea>
<label for="variables">Variables (JSON)</label>
<textarea id="variables" spellcheck="false"></textarea>
<div class="bar"><button id="run">Run</button><button id="stop" class="quiet" hidden>Stop</button><span id="status"></span></div>
</main>
<section><pre id="result"></pre></section>
<script>${script}</script>
</body></html>`;
}

function sha256(text: string): string {
  return `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
}

/**
 * A GET route serving the in-browser explorer: one self-contained page (no CDN, works offline)
 * listing the root fields from introspection, with an operation editor, variables and a Run button
 * that POSTs to `/graphql` (with `apollo-require-preflight` so CSRF prevention lets it through) or,
 * for a subscription, streams over graphql-ws on the same path.
 */
export function explorerRoute(introspection: boolean): RouteHandler {
  const html = page(introspection);
  const csp = [
    "default-src 'none'",
    `script-src ${sha256(script)}`,
    `style-src ${sha256(style)}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  return (req, res) => {
    // 'self' covers ws: only in CSP 3 browsers; name the WebSocket origin too when the Host is sane.
    const host = req.headers.host ?? '';
    const sockets = /^[A-Za-z0-9.:[\]-]{1,255}$/.test(host) ? ` ws://${host} wss://${host}` : '';
    res.statusCode = 200;
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.setHeader('content-security-policy', `${csp}; connect-src 'self'${sockets}`);
    res.setHeader('x-content-type-options', 'nosniff');
    res.setHeader('referrer-policy', 'no-referrer');
    res.setHeader('cache-control', 'no-store');
    res.end(html);
  };
}
