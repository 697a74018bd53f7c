import { appendFile, mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CliDriver, formatSessionId, type DriverFeatures, type MappedOutput, type OutputMapper, type SessionSummary, type TranscriptEntry, type TurnCommand, type TurnSpec } from '@keelson/harness';
import { readJsonlFile } from './readJsonl';

/**
 * A stand-in CLI for hermes (the seed's rotating harness), so rotation can be driven for real: a
 * node script that announces its session id, rotates to a new id when the prompt starts with
 * `rotate`, holds its first turn starting with `sleep` for 30 s, appends its transcript to a JSONL
 * store and prints one answer.
 */
const SCRIPT = String.raw`
const fs = require('node:fs');
const path = require('node:path');
const [store, id, text] = process.argv.slice(2);
const rotated = text.startsWith('rotate') ? id.replace(/_[0-9a-f]+$/, '_' + Date.now().toString(16)) : id;
const file = path.join(store, rotated + '.jsonl');
if (rotated !== id && fs.existsSync(path.join(store, id + '.jsonl'))) fs.copyFileSync(path.join(store, id + '.jsonl'), file);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
out({ type: 'init', session: rotated });
// 'sleep …' holds a session's first such turn for a while (a long turn to interrupt or retry over).
const marker = path.join(store, rotated + '.slept');
const sleep = text.startsWith('sleep') && !fs.existsSync(marker);
if (sleep) fs.writeFileSync(marker, '');
setTimeout(finish, sleep ? 30000 : 0);
function finish() {
  const n = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0;
  fs.appendFileSync(file, JSON.stringify({ id: 'e' + n, role: 'user', content: text, cwd: process.cwd() }) + '\n');
  fs.appendFileSync(file, JSON.stringify({ id: 'e' + (n + 1), role: 'assistant', content: 'ANSWER ' + text }) + '\n');
  out({ type: 'text', text: 'ANSWER ' + text });
  out({ type: 'done' });
}
`;

class ScriptMapper implements OutputMapper {
  line(v: Record<string, unknown>): MappedOutput {
    if (v.type === 'init') return { events: [], nativeId: v.session as string };
    if (v.type === 'text') return { events: [{ type: 'ASSISTANT_DELTA', text: v.text as string }] };
    if (v.type === 'done') return { events: [], result: { ok: true, text: null } };
    return { events: [] };
  }
}

export class ScriptedHermesDriver extends CliDriver {
  readonly harnessId = 'hermes' as const;
  readonly displayName = 'Hermes (scripted)';
  readonly binary = { command: 'node' };
  readonly features: DriverFeatures = { pinning: 'session-id', approvals: false, attachments: false, reasons: {} };

  get storeDir(): string {
    return join(this.root, 'store');
  }

  override newNativeId(): string {
    return `20250701_100000_${Math.floor(Math.random() * 0xffffff).toString(16).padStart(6, '0')}`;
  }

  override async locate() {
    return { path: process.execPath, version: 'scripted' };
  }

  protected async writeConfig(): Promise<void> {
    await mkdir(this.storeDir, { recursive: true });
    await writeFile(join(this.root, 'cli.js'), SCRIPT);
  }

  /** A session as if the CLI had run outside the mesh, in `cwd`. */
  async seedNative(nativeId: string, cwd: string): Promise<void> {
    await this.prepare();
    await appendFile(join(this.storeDir, `${nativeId}.jsonl`), `${JSON.stringify({ id: 'e0', role: 'user', content: 'outside the mesh', cwd })}\n`);
  }

  async command(binary: string, spec: TurnSpec): Promise<TurnCommand> {
    return { argv: [binary, join(this.root, 'cli.js'), this.storeDir, spec.nativeId ?? this.newNativeId(), spec.text], env: this.baseEnv(spec) };
  }

  mapper(): OutputMapper {
    return new ScriptMapper();
  }

  private async entries(nativeId: string): Promise<(TranscriptEntry & { cwd?: string })[]> {
    return readJsonlFile(this.storeDir, `${nativeId}.jsonl`);
  }

  async hasNative(nativeId: string): Promise<boolean> {
    return (await this.entries(nativeId)).length > 0;
  }

  async listNative(): Promise<SessionSummary[]> {
    const names = await readdir(this.storeDir).catch(() => [] as string[]);
    const out: SessionSummary[] = [];
    for (const n of names) {
      const s = await this.findNative(n.replace(/\.jsonl$/, ''));
      if (s) out.push(s);
    }
    return out;
  }

  async findNative(nativeId: string): Promise<SessionSummary | null> {
    const entries = await this.entries(nativeId);
    if (!entries.length) return null;
    return { sessionId: formatSessionId('hermes', nativeId), harnessId: 'hermes', nativeId, cwd: entries[0]!.cwd ?? null, title: entries[0]!.content, createdAt: null, updatedAt: new Date() };
  }

  async transcript(nativeId: string): Promise<TranscriptEntry[]> {
    return (await this.entries(nativeId)).map(({ cwd: _c, ...e }) => ({ ...e, createdAt: null }));
  }
}
