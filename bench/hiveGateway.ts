// The peer gateways for `npm run bench:peers`, each run as a process of its own: Hive Gateway
// (`@graphql-hive/gateway`, its defaults: in-flight deduplication, plan and parse caches) over the
// supergraph file given in KEELSON_BENCH_SUPERGRAPH (the checked-in one, with the running subgraphs'
// URLs), on 127.0.0.1:KEELSON_BENCH_PORT. KEELSON_BENCH_HIVE_RUNTIME=router runs it with the Hive
// Router's Rust query planner and executor instead of its default stitching runtime
// (`@graphql-hive/router-runtime`'s `unifiedGraphHandler`, the documented way to plug it in). It
// forwards the client's caller assertion to the subgraphs, which accept nothing else: the bench
// signs it, as our gateway does for its callers.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createGatewayRuntime } from '@graphql-hive/gateway';
import { unifiedGraphHandler } from '@graphql-hive/router-runtime';
import { ASSERTION_HEADER } from '@keelson/schema';

const supergraph = readFileSync(process.env.KEELSON_BENCH_SUPERGRAPH!, 'utf8');
const port = Number(process.env.KEELSON_BENCH_PORT);
const runtime = process.env.KEELSON_BENCH_HIVE_RUNTIME ?? 'stitching';
if (runtime !== 'stitching' && runtime !== 'router') throw new Error(`KEELSON_BENCH_HIVE_RUNTIME: expected "stitching" or "router", got "${runtime}"`);

const gateway = createGatewayRuntime({
  supergraph,
  logging: 'error',
  ...(runtime === 'router' ? { unifiedGraphHandler } : {}),
  propagateHeaders: {
    fromClientToSubgraphs: ({ request }) => ({ [ASSERTION_HEADER]: request.headers.get(ASSERTION_HEADER) }),
  },
});
const server = createServer(gateway);
server.listen(port, '127.0.0.1', () => process.stdout.write(`listening on ${port} (${runtime} runtime)\n`));
const stop = () => server.close(() => void Promise.resolve(gateway.dispose()).finally(() => process.exit(0)));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
