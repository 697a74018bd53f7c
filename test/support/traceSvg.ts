import type { JaegerTrace } from './observability';

const COLORS: Record<string, string> = {
  'keelson-gateway': '#4e79a7',
  'keelson-runs': '#f28e2b',
  'keelson-worker': '#59a14f',
  'keelson-projects': '#b07aa1',
};

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/**
 * A trace as Jaeger's query API returns it, drawn as Jaeger's timeline draws it: one row per span
 * in depth-first order, indented by depth, a bar from its start for its duration, coloured by service.
 */
export function jaegerTraceSvg(trace: JaegerTrace): string {
  const byId = new Map(trace.spans.map((s) => [s.spanID, s]));
  const children = new Map<string, typeof trace.spans>();
  const roots: typeof trace.spans = [];
  for (const span of trace.spans) {
    const parent = span.references.find((r) => r.refType === 'CHILD_OF' && byId.has(r.spanID))?.spanID;
    if (parent) children.set(parent, [...(children.get(parent) ?? []), span]);
    else roots.push(span);
  }
  const rows: { span: (typeof trace.spans)[number]; depth: number }[] = [];
  const visit = (span: (typeof trace.spans)[number], depth: number) => {
    rows.push({ span, depth });
    for (const child of (children.get(span.spanID) ?? []).sort((a, b) => a.startTime - b.startTime)) visit(child, depth + 1);
  };
  for (const root of roots.sort((a, b) => a.startTime - b.startTime)) visit(root, 0);

  const start = Math.min(...trace.spans.map((s) => s.startTime));
  const end = Math.max(...trace.spans.map((s) => s.startTime + s.duration));
  const total = Math.max(1, end - start);
  const labelWidth = 430;
  const barWidth = 640;
  const rowHeight = 22;
  const top = 58;
  const width = labelWidth + barWidth + 30;
  const height = top + rows.length * rowHeight + 40;
  const services = [...new Set(trace.spans.map((s) => trace.processes[s.processID]!.serviceName))].sort();
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`);
  out.push(`<rect width="100%" height="100%" fill="#ffffff"/>`);
  out.push(`<text x="10" y="20" font-size="14" font-weight="bold">Trace ${trace.traceID} · ${trace.spans.length} spans · ${(total / 1000).toFixed(1)} ms · from Jaeger's query API</text>`);
  services.forEach((service, i) => {
    const x = 10 + i * 170;
    out.push(`<rect x="${x}" y="32" width="12" height="12" fill="${COLORS[service] ?? '#999'}"/><text x="${x + 18}" y="42">${escape(service)}</text>`);
  });
  rows.forEach(({ span, depth }, i) => {
    const y = top + i * rowHeight;
    const service = trace.processes[span.processID]!.serviceName;
    const color = COLORS[service] ?? '#999';
    if (i % 2 === 0) out.push(`<rect x="0" y="${y - 2}" width="${width}" height="${rowHeight}" fill="#f6f6f6"/>`);
    out.push(`<text x="${10 + depth * 12}" y="${y + 13}">${escape(span.operationName)}</text>`);
    const x = labelWidth + ((span.startTime - start) / total) * barWidth;
    const w = Math.max(1.5, (span.duration / total) * barWidth);
    out.push(`<rect x="${x.toFixed(1)}" y="${y + 2}" width="${w.toFixed(1)}" height="${rowHeight - 8}" rx="2" fill="${color}"/>`);
    const ms = `${(span.duration / 1000).toFixed(span.duration < 10_000 ? 2 : 0)} ms`;
    const textX = x + w + 4 > labelWidth + barWidth - 60 ? x - 4 : x + w + 4;
    out.push(`<text x="${textX.toFixed(1)}" y="${y + 13}" fill="#555" text-anchor="${textX < x ? 'end' : 'start'}">${ms}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
