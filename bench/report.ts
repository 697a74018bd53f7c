/** The nearest-rank percentile `p` (0–100) of `samples`; NaN when there are none. */
export function percentile(samples: readonly number[], p: number): number {
  if (!samples.length) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

/** `value` with `digits` decimals, or `n/a` when it is not a finite number. */
export function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}

/** A ratio as `1.93×`. */
export function times(ratio: number): string {
  return `${fixed(ratio, 2)}×`;
}

/**
 * An aligned plain-text table. Columns whose `align` is `right` (numbers) are right-aligned;
 * every line is indented by `indent`.
 */
export function table(headers: string[], rows: string[][], align: ('left' | 'right')[], indent = '  '): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    indent +
    cells
      .map((cell, i) => (align[i] === 'right' ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('   ')
      .trimEnd();
  const rule = indent + widths.map((w) => '-'.repeat(w)).join('   ');
  return [line(headers), rule, ...rows.map(line)].join('\n');
}
