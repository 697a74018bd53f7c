import type { RibDocsSource } from '@keelson/ribs-contract';
import { errorMessage } from '../errors';

/** A docs source as the catalog lists it; `id` is `<ribId>/<slug>`. */
export interface DocsSourceInfo {
  id: string;
  ribId: string;
  title: string;
  summary: string;
}

/** One H1 section of a source. */
export interface DocsTopic {
  title: string;
  text: string;
}

/** Fetches an `llms-full.txt` corpus. */
export type FetchText = (url: string, signal?: AbortSignal) => Promise<string>;

/** The longest topic text returned whole; longer ones are cut with a note. */
export const DOCS_TOPIC_MAX_CHARS = 32_000;

/** The topic holding text before the first H1. */
export const PREAMBLE_TOPIC = '(preamble)';

function slug(title: string): string {
  return title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '') || 'docs';
}

/** Splits markdown into its H1 sections; headings inside fenced code blocks do not count. */
export function splitH1Topics(markdown: string): DocsTopic[] {
  const topics: DocsTopic[] = [];
  let current: { title: string; lines: string[] } = { title: PREAMBLE_TOPIC, lines: [] };
  let fence: string | undefined;
  const flush = () => {
    const text = current.lines.join('\n').trim();
    if (current.title !== PREAMBLE_TOPIC || text.length > 0) topics.push({ title: current.title, text });
  };
  for (const line of markdown.split(/\r?\n/)) {
    const fenceMatch = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fenceMatch) {
      const marker = fenceMatch[1]![0]!;
      if (fence === undefined) fence = marker;
      else if (fence === marker) fence = undefined;
    }
    const h1 = fence === undefined ? /^#\s+(.+?)\s*#*\s*$/.exec(line) : null;
    if (h1) {
      flush();
      current = { title: h1[1]!, lines: [line] };
    } else {
      current.lines.push(line);
    }
  }
  flush();
  return topics;
}

/** A fetch with a timeout, for `llmsFullUrl` sources. */
export function defaultFetchText(timeoutMs = 15_000): FetchText {
  return async (url, signal) => {
    const timeout = AbortSignal.timeout(timeoutMs);
    const res = await fetch(url, { signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
    if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
    return res.text();
  };
}

/**
 * Every rib's docs sources, namespaced under the owning rib id. Inline content is indexed as is;
 * an `llmsFullUrl` corpus is fetched on first use and cached (a failed fetch is retried next time).
 */
export class DocsCatalog {
  private readonly sources = new Map<string, { info: DocsSourceInfo; source: RibDocsSource }>();
  private readonly corpora = new Map<string, Promise<string>>();

  constructor(private readonly fetchText: FetchText) {}

  /** Adds a validated source; returns its id. */
  add(ribId: string, source: RibDocsSource): string {
    const base = `${ribId}/${slug(source.title)}`;
    let id = base;
    for (let n = 2; this.sources.has(id); n++) id = `${base}-${n}`;
    this.sources.set(id, { info: { id, ribId, title: source.title, summary: source.summary }, source });
    return id;
  }

  list(): DocsSourceInfo[] {
    return [...this.sources.values()].map((s) => s.info);
  }

  /** The H1 topics of a source, or undefined for an unknown id. Rejects when a corpus cannot be fetched. */
  async topics(id: string, signal?: AbortSignal): Promise<DocsTopic[] | undefined> {
    const entry = this.sources.get(id);
    if (!entry) return undefined;
    return splitH1Topics(await this.corpus(id, entry.source, signal));
  }

  /** One topic by title (case-insensitive) or 1-based number; undefined when there is none. */
  async topic(id: string, ref: string, signal?: AbortSignal): Promise<DocsTopic | undefined> {
    const topics = await this.topics(id, signal);
    if (!topics) return undefined;
    const wanted = ref.trim().toLowerCase();
    const byNumber = /^\d+$/.test(wanted) ? topics[Number(wanted) - 1] : undefined;
    const found = byNumber ?? topics.find((t) => t.title.toLowerCase() === wanted);
    if (!found || found.text.length <= DOCS_TOPIC_MAX_CHARS) return found;
    return { title: found.title, text: `${found.text.slice(0, DOCS_TOPIC_MAX_CHARS)}\n\n[truncated at ${DOCS_TOPIC_MAX_CHARS} characters]` };
  }

  private corpus(id: string, source: RibDocsSource, signal?: AbortSignal): Promise<string> {
    if (source.content !== undefined) return Promise.resolve(source.content);
    let cached = this.corpora.get(id);
    if (!cached) {
      cached = this.fetchText(source.llmsFullUrl!, signal).catch((err) => {
        this.corpora.delete(id);
        throw new Error(`could not fetch ${source.llmsFullUrl}: ${errorMessage(err)}`);
      });
      this.corpora.set(id, cached);
    }
    return cached;
  }
}
