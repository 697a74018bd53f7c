/**
 * The V8 heap settings this process was started with (`--max-semi-space-size`, `--max-old-space-size`),
 * for the node processes it starts in turn: a gateway child of `npm start` runs with the same heap
 * tuning as its parent. The mesh's entries start with `--max-semi-space-size=64` (package.json, and
 * NODE_OPTIONS in the Dockerfile): a request allocates ~1–3 MB of short-lived GraphQL result and row
 * objects, and at 20 concurrent requests V8's default young generation is too small to hold them, so
 * they are copied into the old generation and collected there (27–37% of a subgraph's CPU in GC).
 * See bench/README.md "Heap".
 */
export function heapFlags(execArgv: readonly string[] = process.execArgv): string[] {
  return execArgv.filter((arg) => /^--max-(semi|old)-space-size=\d+$/.test(arg));
}
