/** One request as the server received it, and how the script answered it. */
export interface RecordedRequest {
  /** 1, 2, 3… in arrival order; survives `clear()`, so `since` cursors stay valid. */
  seq: number;
  at: string;
  method: string;
  /** Path with query string, e.g. `/v1/messages?beta=true`. */
  path: string;
  /** Lower-cased names; credentials replaced by `[redacted]`. */
  headers: Record<string, string>;
  /** Parsed JSON when the body was JSON, else the text; undefined when empty. */
  body: unknown;
  /** Which API answered: a model protocol, `embeddings`, `models`, `count_tokens`, or undefined for a 404. */
  api?: 'anthropic' | 'chat' | 'responses' | 'embeddings' | 'models' | 'count_tokens';
  status?: number;
  /** Model calls: the last real user text the script read. */
  userText?: string;
  /** Model calls: tool-result rounds after that text. */
  toolRounds?: number;
  /** Model calls: the rule or built-in behaviour that answered (`marker:WRITE_FILE`, `side:title`…). */
  decidedBy?: string;
  /** Model calls: true for a CLI's side request (title, memory extraction). */
  side?: boolean;
  /** Model calls: names of the tools called in the answer. */
  toolCalls?: string[];
}

const SECRET_HEADERS = new Set(['authorization', 'proxy-authorization', 'x-api-key', 'api-key', 'x-goog-api-key', 'cookie', 'set-cookie']);

/** Request headers fit for a log: single values, credentials masked. */
export function redactHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = SECRET_HEADERS.has(name.toLowerCase()) ? '[redacted]' : Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** The last `limit` requests, oldest first. */
export class RequestLog {
  private entries: RecordedRequest[] = [];
  private nextSeq = 1;

  constructor(private readonly limit: number) {}

  /** Appends a request; the returned entry is filled in as the request is answered. */
  add(entry: Omit<RecordedRequest, 'seq' | 'at'>): RecordedRequest {
    const recorded: RecordedRequest = { seq: this.nextSeq++, at: new Date().toISOString(), ...entry };
    this.entries.push(recorded);
    if (this.entries.length > this.limit) this.entries.splice(0, this.entries.length - this.limit);
    return recorded;
  }

  /** Copies of the entries with `seq` greater than `since`. */
  list(since = 0): RecordedRequest[] {
    return this.entries.filter((e) => e.seq > since).map((e) => structuredClone(e));
  }

  clear(): void {
    this.entries = [];
  }
}
