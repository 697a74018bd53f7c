/**
 * Text substitution for prompt and approval texts: `{{inputs.NAME}}` and `{{nodes.ID.output}}`.
 * bash and script nodes get the same values as environment variables instead (never spliced into a
 * command line).
 */
const PLACEHOLDER = /\{\{\s*(inputs\.([A-Za-z_][A-Za-z0-9_]*)|nodes\.([A-Za-z][A-Za-z0-9_-]*)\.output)\s*\}\}/g;

/** Node ids a text reads with `{{nodes.ID.output}}`. */
export function referencedNodes(text: string): string[] {
  const ids = new Set<string>();
  for (const m of text.matchAll(PLACEHOLDER)) if (m[3]) ids.add(m[3]);
  return [...ids];
}

/** Fills the placeholders; an unknown input or node reads as the empty string. */
export function renderText(text: string, values: { inputs: Record<string, string>; outputs: Record<string, string> }): string {
  return text.replace(PLACEHOLDER, (_all, _expr, input?: string, node?: string) =>
    input !== undefined ? (values.inputs[input] ?? '') : (values.outputs[node!] ?? '').trim(),
  );
}

/** `$ARTIFACTS_DIR` / `${ARTIFACTS_DIR}` → the run's artifacts directory (prompt nodes: the model needs real paths). */
export function withArtifactsDir(text: string, artifactsDir: string): string {
  return text.replace(/\$\{ARTIFACTS_DIR\}|\$ARTIFACTS_DIR\b/g, artifactsDir);
}

/** `KEELSON_INPUT_<NAME>` for every input: the environment of bash and script nodes. */
export function inputEnv(inputs: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(inputs).map(([k, v]) => [`KEELSON_INPUT_${k.toUpperCase()}`, v]));
}
