import { posix } from 'node:path';
import type { JsonSchema, ConversationToolSpec } from '../conversation/conversation';

/** A call to make, or why none fits. */
export type ToolChoice = { tool: ConversationToolSpec; input: Record<string, unknown> | string } | { error: string };

const PATH_KEYS = ['file_path', 'filePath', 'path', 'absolute_path', 'filename', 'file'];
const CONTENT_KEYS = ['content', 'contents', 'file_text', 'text', 'data'];
const EDIT_KEYS = ['old_string', 'oldString', 'old_str', 'oldText', 'edits', 'diff', 'patch'];
const WRITER_NAMES = ['write', 'write_file', 'writefile', 'create_file', 'createfile'];
const SHELL_NAMES = /shell|bash|exec|command|terminal/i;

/** The request's tool called `name`: exact, then case-insensitive, then an MCP-style `…__name`. */
export function findTool(tools: ConversationToolSpec[], name: string): ConversationToolSpec | undefined {
  return (
    tools.find((t) => t.name === name) ??
    tools.find((t) => t.name.toLowerCase() === name.toLowerCase()) ??
    tools.find((t) => t.name.endsWith(`__${name}`))
  );
}

/** Ends `content` with exactly the newline a file written by any of the CLIs' tools would. */
export function fileContent(content: string): string {
  return content === '' || content.endsWith('\n') ? content : `${content}\n`;
}

/**
 * One call to the CLI's own file-write tool, chosen from `tools` by name and schema: a writer
 * (`Write`, `write_file`, `write`…) with a path and a content property; else a patch tool
 * (`apply_patch`, freeform or JSON); else a shell tool with a heredoc. The path is made absolute
 * against `cwd` when the writer's schema asks for an absolute path.
 */
export function chooseWrite(tools: ConversationToolSpec[], path: string, content: string, cwd: string | undefined): ToolChoice {
  const body = fileContent(content);

  const writer = pickWriter(tools);
  if (writer) {
    const props = writer.schema?.properties ?? {};
    const pathKey = PATH_KEYS.find((k) => k in props) as string;
    const contentKey = CONTENT_KEYS.find((k) => k in props) as string;
    const target = needsAbsolute(pathKey, props[pathKey]) && cwd && !path.startsWith('/') ? posix.resolve(cwd, path) : path;
    return { tool: writer, input: { [pathKey]: target, [contentKey]: body } };
  }

  const patcher = tools.find((t) => /apply_patch/i.test(t.name));
  if (patcher) {
    const patch = addFilePatch(path, body);
    if (patcher.kind === 'custom') return { tool: patcher, input: patch };
    const props = patcher.schema?.properties ?? {};
    const key = ['input', 'patch'].find((k) => k in props) ?? 'input';
    return { tool: patcher, input: { [key]: patch } };
  }

  const shell = pickShell(tools);
  if (shell) {
    const script = heredoc(path, body);
    const props = shell.tool.schema?.properties ?? {};
    const value = isArrayType(props[shell.key]) ? ['bash', '-lc', script] : script;
    return { tool: shell.tool, input: { [shell.key]: value } };
  }

  return { error: `WRITE_FILE: none of the offered tools can write a file (${tools.map((t) => t.name).join(', ') || 'no tools'})` };
}

function pickWriter(tools: ConversationToolSpec[]): ConversationToolSpec | undefined {
  const candidates = tools.filter((t) => {
    const props = t.schema?.properties;
    if (t.kind !== 'function' || !props) return false;
    const keys = Object.keys(props);
    return keys.some((k) => PATH_KEYS.includes(k)) && keys.some((k) => CONTENT_KEYS.includes(k)) && !keys.some((k) => EDIT_KEYS.includes(k));
  });
  return (
    candidates.find((t) => WRITER_NAMES.includes(t.name.toLowerCase())) ??
    candidates.find((t) => /write|create/i.test(t.name)) ??
    undefined
  );
}

function pickShell(tools: ConversationToolSpec[]): { tool: ConversationToolSpec; key: string } | undefined {
  for (const tool of tools) {
    const props = tool.schema?.properties;
    if (tool.kind !== 'function' || !props || !SHELL_NAMES.test(tool.name)) continue;
    const key = ['command', 'cmd'].find((k) => k in props);
    if (key) return { tool, key };
  }
  return undefined;
}

/** Whether a path property wants an absolute path: its name says so, or its description does without allowing relative ones. */
function needsAbsolute(key: string, schema: JsonSchema | undefined): boolean {
  if (key === 'absolute_path') return true;
  const description = schema?.description ?? '';
  return /absolute/i.test(description) && !/relative or absolute|absolute or relative/i.test(description);
}

function isArrayType(schema: JsonSchema | undefined): boolean {
  const type = schema?.type;
  return type === 'array' || (Array.isArray(type) && type.includes('array'));
}

/** A codex `apply_patch` that adds one file (Add File overwrites an existing one). */
export function addFilePatch(path: string, body: string): string {
  const lines = body === '' ? [''] : body.replace(/\n$/, '').split('\n');
  return ['*** Begin Patch', `*** Add File: ${path}`, ...lines.map((l) => `+${l}`), '*** End Patch'].join('\n');
}

function heredoc(path: string, body: string): string {
  const quoted = `'${path.replace(/'/g, `'\\''`)}'`;
  let marker = 'KEELSON_EOF';
  while (body.includes(marker)) marker += '_';
  const dir = posix.dirname(path);
  const mkdir = dir === '.' ? '' : `mkdir -p '${dir.replace(/'/g, `'\\''`)}' && `;
  return `${mkdir}cat > ${quoted} <<'${marker}'\n${body}${body.endsWith('\n') || body === '' ? '' : '\n'}${marker}`;
}
