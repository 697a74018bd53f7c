import type { SwarmSummary } from './operator/operatorApi';

/** The board's snapshot key. */
export const SWARM_BOARD_KEY = 'rib:swarm';

/** The board of live swarms, as markdown. */
export function renderBoard(live: readonly SwarmSummary[] | { error: string }): string {
  if ('error' in live) return `# Swarms\n\nThe swarms service did not answer: ${live.error}`;
  if (live.length === 0) return '# Swarms\n\nNo swarm is running. Start one with `chat_swarm_start`.';
  const rows = live.map((s) => {
    const lead = s.agents.find((a) => a.lead);
    const busy = s.agents.filter((a) => a.status === 'BUSY').length;
    const where = s.channel.webUrl ? `[#${s.channel.name}](${s.channel.webUrl})` : `#${s.channel.name}`;
    const task = s.task.split('\n')[0]!.replace(/\|/g, '\\|').slice(0, 80);
    return `| ${task} | ${s.status} | ${s.turnsUsed} | ${s.agents.length} (${busy} busy) | ${lead ? `@${lead.handle}` : '—'} | ${where} |`;
  });
  return ['# Swarms', '', '| task | status | turns | agents | lead | channel |', '| --- | --- | --- | --- | --- | --- |', ...rows].join('\n');
}
