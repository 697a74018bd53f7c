import type { Logger } from '@keelson/service';
import type { DataSource } from 'typeorm';
import type { MemorySettings } from '../settings';
import { ensureVectorStore, probeVectorExtension, type VectorExtensionProbe, type VectorStore } from './vectorStore';

export type SearchMode = 'LEXICAL' | 'HYBRID';

/** Which search is active, and why (`memorySearchMode`). */
export interface SearchModeInfo {
  mode: SearchMode;
  /** pgvector is installable on the server (`pg_available_extensions`). */
  vectorExtensionAvailable: boolean;
  embeddingsConfigured: boolean;
  embeddingModel: string | null;
  reason: string;
}

/** What boot decided: the mode, and the vector store when HYBRID. */
export interface SearchModeDecision {
  info: SearchModeInfo;
  store?: VectorStore;
}

/**
 * The mode for what the server offers and what is configured, before anything is created: LEXICAL
 * with the reason when pgvector is not installed or no embeddings endpoint is configured; otherwise
 * undefined (HYBRID, once the vector store is created).
 */
export function lexicalReason(probe: VectorExtensionProbe, settings: MemorySettings): string | undefined {
  const noEndpoint = settings.embeddingsMissing ?? 'no embeddings endpoint is configured';
  if (!probe.available) {
    return (
      `lexical: pgvector is not installed on the Postgres server (package postgresql-${probe.serverMajor}-pgvector)` +
      (settings.embeddings ? '' : `; and ${noEndpoint}`)
    );
  }
  if (!settings.embeddings) return `lexical: pgvector is available but ${noEndpoint}`;
  return undefined;
}

/** The HYBRID reason: what is fused, with which model, length and index. */
export function hybridReason(store: VectorStore, model: string): string {
  const vectors =
    store.index === 'hnsw'
      ? `${store.dimensions} dimensions, HNSW index`
      : store.dimensions
        ? `${store.dimensions} dimensions, exact search: pgvector ${store.version} has no filtered index scans (0.8+ has)`
        : 'exact search: set KEELSON_EMBEDDINGS_DIMENSIONS for an index';
  return `hybrid: full text + trigram + pgvector ${store.version} (${model}, ${vectors}), fused by reciprocal rank`;
}

/**
 * Decides the search mode at boot: HYBRID (full text + trigram + vector) when pgvector is available,
 * an embeddings endpoint is configured and the vector store could be created; LEXICAL (full text +
 * trigram) otherwise, with the reason. Creating nothing in LEXICAL mode: a database without an
 * embeddings endpoint never gets the extension.
 */
export async function detectSearchMode(dataSource: DataSource, settings: MemorySettings, log: Logger): Promise<SearchModeDecision> {
  const probe = await probeVectorExtension(dataSource);
  const embeddingModel = settings.embeddings?.model ?? null;
  const base = { vectorExtensionAvailable: probe.available, embeddingsConfigured: !!settings.embeddings, embeddingModel };
  const lexical = lexicalReason(probe, settings);
  if (lexical || !settings.embeddings) return { info: { ...base, mode: 'LEXICAL', reason: lexical! } };
  try {
    const store = await ensureVectorStore(dataSource, settings.embeddings);
    return { info: { ...base, mode: 'HYBRID', reason: hybridReason(store, settings.embeddings.model) }, store };
  } catch (err) {
    log.warn({ err }, 'pgvector is available but the vector store could not be created; search stays lexical');
    return { info: { ...base, mode: 'LEXICAL', reason: `lexical: pgvector is available but could not be enabled: ${(err as Error).message}` } };
  }
}

interface Failure {
  at: Date;
  message: string;
}

/**
 * The mode searches run in now. Boot decides whether HYBRID is possible; in HYBRID, a failing
 * embeddings endpoint makes searches lexical until it answers again, and `current` says so (LEXICAL,
 * naming the failure) rather than claiming a hybrid search it is not doing. While it fails, one
 * search per `retryMs` tries it; the others do not wait on it.
 */
export class SearchModeState {
  private queryFailure: Failure | undefined;
  private indexerFailure: Failure | undefined;

  constructor(
    readonly decision: SearchModeDecision,
    /** How long searches leave a failed endpoint alone: its timeout (KEELSON_EMBEDDINGS_TIMEOUT_MS), so a hanging one holds up one search in two timeouts. @default 10000 */
    private readonly retryMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  get store(): VectorStore | undefined {
    return this.decision.store;
  }

  get current(): SearchModeInfo {
    const { info } = this.decision;
    if (info.mode !== 'HYBRID') return info;
    if (this.queryFailure) {
      return {
        ...info,
        mode: 'LEXICAL',
        reason:
          `lexical for now: hybrid is configured but the embeddings endpoint failed at ${this.queryFailure.at.toISOString()} ` +
          `(${this.queryFailure.message}); a search retries it every ${this.retryMs / 1000} s and hybrid resumes when it answers`,
      };
    }
    if (this.indexerFailure) {
      return {
        ...info,
        reason: `${info.reason}; embedding new items failed at ${this.indexerFailure.at.toISOString()} (${this.indexerFailure.message}), so they are found lexically until the next append retries`,
      };
    }
    return info;
  }

  /** Whether a search should embed its query: HYBRID, and the endpoint not resting after a failure. */
  shouldEmbedQuery(): boolean {
    if (!this.decision.store) return false;
    return !this.queryFailure || this.now() - this.queryFailure.at.getTime() >= this.retryMs;
  }

  /** @returns true when this ends a failure (the endpoint is back) */
  queryEmbedded(): boolean {
    const recovered = !!this.queryFailure;
    this.queryFailure = undefined;
    return recovered;
  }

  queryEmbeddingFailed(err: Error): void {
    this.queryFailure = { at: new Date(this.now()), message: err.message };
  }

  indexerSucceeded(): void {
    this.indexerFailure = undefined;
  }

  indexerFailed(err: Error): void {
    this.indexerFailure = { at: new Date(this.now()), message: err.message };
  }
}
