/**
 * A prompt node's prompt as its turn received it, rebuilt from the run: the workflow definition's
 * placeholders `{{inputs.NAME}}` and `{{nodes.ID.output}}` (an unknown one reads as empty, a node's
 * output trimmed) and `$ARTIFACTS_DIR` / `${ARTIFACTS_DIR}`. The same rules the worker renders with;
 * the upstream outputs it reads are final (a succeeded node never runs again).
 */
const PLACEHOLDER = /\{\{\s*(inputs\.([A-Za-z_][A-Za-z0-9_]*)|nodes\.([A-Za-z][A-Za-z0-9_-]*)\.output)\s*\}\}/g;

export function renderPromptText(text: string, values: { inputs: Record<string, string>; outputs: Record<string, string>; artifactsDir: string }): string {
  const filled = text.replace(PLACEHOLDER, (_all, _expr, input?: string, node?: string) =>
    input !== undefined ? (values.inputs[input] ?? '') : (values.outputs[node!] ?? '').trim(),
  );
  return filled.replace(/\$\{ARTIFACTS_DIR\}|\$ARTIFACTS_DIR\b/g, values.artifactsDir);
}
