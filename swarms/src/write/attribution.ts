/**
 * Trailers and lines that mark a commit as written by an AI tool. A writer's commit must not carry
 * them into the base (seed 001: the rib checks incoming commits for AI attribution before landing).
 */
const PATTERNS: readonly RegExp[] = [
  /^co-authored-by:.*\b(claude|anthropic|openai|chatgpt|gpt-?\d|copilot|gemini|codex|cursor|devin|aider)\b/im,
  /^co-authored-by:.*noreply@anthropic\.com/im,
  /\bgenerated (with|by) .*\b(claude|chatgpt|copilot|gemini|an? (ai|llm))\b/im,
  /🤖/u,
];

/** The first line of `message` that attributes it to an AI tool, or undefined. */
export function aiAttributionIn(message: string): string | undefined {
  for (const pattern of PATTERNS) {
    const m = pattern.exec(message);
    if (m) return message.split('\n').find((line) => pattern.test(line))?.trim() ?? m[0];
  }
  return undefined;
}
