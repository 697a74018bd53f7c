// The reconciliation table the fault and cluster suites print from their scenarios' ledger rows
// (test/faults/ledger.ts): one line per scenario; a row that does not reconcile fails the run.
const { readdirSync, readFileSync, rmSync } = require('node:fs');
const { join } = require('node:path');

/** Reads every row in `dir` (then removes it), prints the table under `title`, throws when a row does not reconcile. */
function printReconciliation(dir, title) {
  const rows = readdirSync(dir).map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')));
  rmSync(dir, { recursive: true, force: true });
  const ok = (r) => r.acknowledgedPersisted === r.acknowledged && r.delivered === r.streamPersisted && r.duplicates === 0 && r.failedByFaults === 0 && r.orphans === 0;
  const ms = (list) => (list.length ? `${Math.min(...list)}/${Math.round(list.reduce((a, b) => a + b, 0) / list.length)}/${Math.max(...list)}` : '-');
  const header = ['scenario', 'faults', 'acked', 'acked⊆persisted', 'persisted', 'delivered/log', 'dup', 'failed', 'orphans', 'recovery ms min/avg/max', 'ok'];
  const lines = rows.map((r) => [
    r.scenario,
    String(r.faults),
    String(r.acknowledged),
    `${r.acknowledgedPersisted}/${r.acknowledged}`,
    String(r.persisted),
    r.delivered < 0 ? '-' : `${r.delivered}/${r.streamPersisted}`,
    String(r.duplicates),
    String(r.failedByFaults),
    String(r.orphans),
    ms(r.recoveryMs),
    ok(r) ? 'yes' : 'NO',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  const out = ['', `== ${title}`, fmt(header), fmt(widths.map((w) => '-'.repeat(w))), ...lines.map(fmt)];
  for (const r of rows) if (r.note) out.push(`  ${r.scenario}: ${r.note}`);
  process.stdout.write(`${out.join('\n')}\n`);
  const bad = rows.filter((r) => !ok(r));
  if (bad.length) throw new Error(`${title}: ${bad.length} scenario(s) do not reconcile: ${bad.map((r) => r.scenario).join(', ')}`);
}

module.exports = { printReconciliation };
