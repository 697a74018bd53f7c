// Monaco's language workers, each bundled by ../build.js as its own file next to app.js, so the CSP
// can say `worker-src 'self'` (no blob: workers).
const worker = (name: string) => new Worker(new URL(`./${name}.worker.js`, import.meta.url), { type: 'module', name });

(globalThis as { MonacoEnvironment?: unknown }).MonacoEnvironment = {
  getWorker(_id: string, label: string) {
    if (label === 'graphql') return worker('graphql');
    if (label === 'json') return worker('json');
    return worker('editor');
  },
};
