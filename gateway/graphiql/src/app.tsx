// GraphiQL at the gateway's root page, bundled offline by ./build.js (no CDN). It talks to the
// gateway it was served by: queries and mutations over HTTP, subscriptions over graphql-ws on the
// same path, introspection (autocompletion, docs, the explorer) through the same fetcher.
import { explorerPlugin } from '@graphiql/plugin-explorer';
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { GraphiQL, HISTORY_PLUGIN } from 'graphiql';
import { createClient } from 'graphql-ws';
import { createRoot } from 'react-dom/client';
import { takeToken } from './token';
import './workers';
import 'graphiql/style.css';
import '@graphiql/plugin-explorer/style.css';
import './app.css';

const token = takeToken(window.location, window.history, window.sessionStorage);
const authorization = token ? `Bearer ${token}` : undefined;
const url = new URL('/graphql', window.location.href).toString();
const wsUrl = url.replace(/^http/, 'ws');

// The token goes with every request: a header over HTTP (a header typed in the headers editor wins),
// `connection_init`'s payload over WebSocket — the gateway authenticates that, not the upgrade.
const fetcher = createGraphiQLFetcher({
  url,
  headers: authorization ? { authorization } : {},
  enableIncrementalDelivery: false,
  wsClient: createClient({ url: wsUrl, connectionParams: () => (authorization ? { authorization } : {}), lazy: true }),
});

const defaultQuery = `# Keelson Mesh: one federated schema. Ctrl+Space completes, Ctrl+Enter runs;
# the docs and the explorer are in the left bar. A subscription streams over graphql-ws.
${token ? '' : '#\n# No token: open the URL `npm start` printed (it carries one after #token=),\n# or add {"authorization": "Bearer kmt_…"} in Headers below.\n'}
query Projects {
  projects { id name headCommit }
}
`;

// Passing `plugins` replaces GraphiQL's defaults, so History (the default) is listed again beside the explorer.
createRoot(document.getElementById('graphiql')!).render(
  <GraphiQL fetcher={fetcher} plugins={[HISTORY_PLUGIN, explorerPlugin()]} defaultQuery={defaultQuery} shouldPersistHeaders={false} />,
);
