/** Who can see a memory row. */
export interface MemoryScope {
  projectId?: string;
  visibility?: 'private' | 'project' | 'global';
}

/** A recalled memory row. */
export interface MemoryRecord {
  id: string;
  kind: 'decision' | 'lesson' | 'work-log' | 'evidence';
  text: string;
  createdAt: string;
}

/**
 * The governed memory ledger a rib reads and writes. Writeback is evidence-default and
 * review-gated: it cannot mint an instruction-grade, always-inject row.
 */
export interface MemoryTools {
  recall(req: { query: string; scope?: MemoryScope; limit?: number }): Promise<readonly MemoryRecord[]>;
  writeback(entry: { text: string; kind?: MemoryRecord['kind']; scope?: MemoryScope }): Promise<{ id: string }>;
}
