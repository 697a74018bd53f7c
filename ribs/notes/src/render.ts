import type { Note } from './noteStore';

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** Notes in display order: pinned first, then newest first. */
export function ordered(notes: readonly Note[]): Note[] {
  return [...notes].sort((a, b) => Number(b.pinned) - Number(a.pinned) || b.createdAt.localeCompare(a.createdAt));
}

/**
 * The html canvas (`rib:notes`): every note as a card whose buttons post `{ action, payload }` to
 * the host, which relays them with origin `canvas-html`. The markup offers only the verbs a canvas
 * may use (pin, unpin, discuss); the rib refuses the rest from a canvas whatever a frame posts.
 * Note text is escaped: it is untrusted chat content.
 */
export function renderCanvas(notes: readonly Note[]): string {
  const cards = ordered(notes)
    .map((n) => {
      const verb = n.pinned ? 'unpin' : 'pin';
      const tags = n.tags.map((t) => `<span class="tag">#${escapeHtml(t)}</span>`).join(' ');
      return [
        `<article class="note${n.pinned ? ' pinned' : ''}" data-id="${n.id}">`,
        `<h2>${escapeHtml(n.title)}</h2>`,
        `<pre>${escapeHtml(n.text)}</pre>`,
        `<footer>${tags} <time>${escapeHtml(n.createdAt)}</time>`,
        `<button data-action="${verb}" data-id="${n.id}">${n.pinned ? 'Unpin' : 'Pin'}</button>`,
        `<button data-action="discuss" data-id="${n.id}">Discuss</button></footer>`,
        '</article>',
      ].join('');
    })
    .join('\n');
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Notes</title>
<style>
body{font:14px system-ui,sans-serif;margin:12px}
.note{border:1px solid #ccc;border-radius:6px;padding:8px 12px;margin:0 0 10px}
.note.pinned{border-color:#b58900}
h2{font-size:15px;margin:0 0 6px}
pre{white-space:pre-wrap;margin:0 0 6px;font:inherit}
.tag{color:#268bd2}
time{color:#888;margin:0 8px}
</style></head><body>
${cards || '<p>No notes yet. Send one from chat, or add one with the notes_add tool.</p>'}
<script>
document.addEventListener('click', function (event) {
  var button = event.target.closest('button[data-action]');
  if (!button) return;
  window.parent.postMessage({ action: button.dataset.action, payload: { id: button.dataset.id } }, '*');
});
</script>
</body></html>
`;
}

/** The markdown list (`rib:notes:list`): pinned first, then newest first. */
export function renderMarkdown(notes: readonly Note[]): string {
  if (notes.length === 0) return '_No notes yet._\n';
  return `${ordered(notes)
    .map((n) => `- ${n.pinned ? '📌 ' : ''}**${n.title.replace(/([*_`[\]])/g, '\\$1')}** (${n.id})${n.tags.length ? ` ${n.tags.map((t) => `#${t}`).join(' ')}` : ''}`)
    .join('\n')}\n`;
}

/** A digest of notes for an agent's system prompt, within `budget` characters. */
export function digest(notes: readonly Note[], budget: number): string {
  const out: string[] = [];
  let used = 0;
  for (const n of ordered(notes)) {
    const entry = `## ${n.title}\n${n.text}\n`;
    if (used + entry.length > budget) break;
    out.push(entry);
    used += entry.length;
  }
  return out.join('\n') || '(no notes yet)';
}
