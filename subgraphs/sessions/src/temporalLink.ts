import { MeshError, type TemporalTarget } from '@keelson/schema';
import { connectClient, workflowUiUrl } from '@keelson/temporal';
import type { Client } from '@temporalio/client';

/** One lazily opened Temporal client for the subgraph's workflows; SERVICE_UNAVAILABLE without a target. */
export class TemporalLink {
  private client: Promise<Client> | undefined;

  constructor(readonly target: TemporalTarget | null) {}

  /** The client, connected on first use (a failed connect is retried by the next call). */
  connect(what: string): Promise<Client> {
    const target = this.target;
    if (!target) throw new MeshError('SERVICE_UNAVAILABLE', `${what} need Temporal, and this sessions subgraph has no TEMPORAL_ADDRESS`);
    this.client ??= connectClient({ address: target.address, namespace: target.namespace }).catch((err: unknown) => {
      this.client = undefined;
      throw err;
    });
    return this.client;
  }

  get taskQueue(): string {
    if (!this.target) throw new MeshError('SERVICE_UNAVAILABLE', 'this sessions subgraph has no TEMPORAL_ADDRESS');
    return this.target.taskQueue;
  }

  /** The Web UI page of a workflow, when the UI's URL is known. */
  uiUrl(workflowId: string, runId: string | null): string | null {
    return this.target?.uiUrl ? workflowUiUrl(this.target.uiUrl, this.target.namespace, workflowId, runId ?? undefined) : null;
  }

  async stop(): Promise<void> {
    const client = await this.client?.catch(() => undefined);
    this.client = undefined;
    await client?.connection.close().catch(() => undefined);
  }
}
