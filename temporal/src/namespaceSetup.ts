import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { searchAttributes } from '@keelson/schema';

/** `temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD`. */
const KEYWORD = 2;
/** gRPC status codes the setup tells apart. */
const ALREADY_EXISTS = 6;
const NOT_FOUND = 5;

export interface NamespaceSetupOptions {
  /** The frontend, host:port. */
  address: string;
  namespace: string;
  /** How long closed workflows are kept. @default 3 days */
  retentionDays?: number;
  /** How long to wait for the server and for the namespace to be served. @default 60 s */
  timeoutMs?: number;
}

/**
 * Makes a fresh Temporal server ready for the mesh, idempotently: the namespace registered (if
 * missing) and served, and every mesh search attribute (`KeelsonKind`, `KeelsonProject`, …) added as
 * a Keyword where it is missing. What the dev server gets from `--search-attribute` and compose from
 * `temporal operator search-attribute create`. Resolves with the attributes it added.
 */
export async function ensureNamespaceAndSearchAttributes(opts: NamespaceSetupOptions): Promise<string[]> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  const connection = await connectWhenServing(opts.address, deadline);
  try {
    await connection.workflowService
      .registerNamespace({ namespace: opts.namespace, workflowExecutionRetentionPeriod: msToTs(`${opts.retentionDays ?? 3} days`) })
      .catch((err: { code?: number }) => {
        if (err.code !== ALREADY_EXISTS) throw err;
      });
    // A namespace just registered is served once the frontend's namespace cache has it.
    await untilDeadline(deadline, `namespace ${opts.namespace} served at ${opts.address}`, () =>
      connection.workflowService.listWorkflowExecutions({ namespace: opts.namespace, pageSize: 1 }).then(
        () => true,
        (err: { code?: number }) => {
          if (err.code === NOT_FOUND) return false;
          throw err;
        },
      ),
    );
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace: opts.namespace });
    const missing = Object.values(searchAttributes).filter((name) => !customAttributes || !(name in customAttributes));
    if (missing.length > 0) {
      await connection.operatorService
        .addSearchAttributes({ namespace: opts.namespace, searchAttributes: Object.fromEntries(missing.map((name) => [name, KEYWORD])) })
        .catch((err: { code?: number }) => {
          // Another start added them meanwhile.
          if (err.code !== ALREADY_EXISTS) throw err;
        });
    }
    return missing;
  } finally {
    await connection.close();
  }
}

async function connectWhenServing(address: string, deadline: number): Promise<Connection> {
  let connection: Connection | undefined;
  await untilDeadline(deadline, `the Temporal frontend at ${address}`, async () => {
    try {
      connection ??= await Connection.connect({ address, connectTimeout: 2_000 });
      await connection.workflowService.getSystemInfo({});
      return true;
    } catch {
      return false;
    }
  });
  return connection!;
}

async function untilDeadline(deadline: number, what: string, probe: () => Promise<boolean>): Promise<void> {
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
