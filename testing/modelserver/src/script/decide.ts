import { randomBytes } from 'node:crypto';
import type { Conversation } from '../conversation/conversation';
import { builtinRules, markerModifiers } from './markers';
import type { ReplyPlan } from './replyPlan';
import type { ReplySpec, Rule } from './rule';
import { answerSideRequest } from './sideRequests';
import { chooseWrite, findTool } from './toolChoice';

/** A fresh call id: unique per call, as every CLI keys tool results on it. */
export function newCallId(): string {
  return `call_${randomBytes(12).toString('hex')}`;
}

/**
 * Decides the answer to one request: a side request gets its short answer; otherwise the first rule
 * that matches the last real user text answers, at the step given by the tool-result rounds since.
 * `rules` are consulted in order, then the built-in marker rules, then the echo.
 */
export function decide(conv: Conversation, rules: Rule[]): ReplyPlan {
  const side = answerSideRequest(conv);
  if (side) return { ...emptyPlan(side.name), text: side.text, side: true };

  const all = [...rules, ...builtinRules];
  for (let i = 0; i < all.length; i++) {
    const rule = all[i];
    const groups = matchRule(rule, conv);
    if (!groups) continue;
    const steps = typeof rule.reply === 'function' ? rule.reply({ ...conv, groups }) : rule.reply;
    if (steps === undefined) continue;
    const list = Array.isArray(steps) ? steps : [steps];
    if (list.length === 0) continue;
    const spec = stepAt(list, conv);
    const substituted = typeof rule.reply === 'function' ? spec : substitute(spec, groups);
    return planFrom({ ...markerModifiers(conv.userText), ...stripUndefined(substituted) }, conv, rule.name ?? `rule ${i}`);
  }
  // The echo rule matches everything; this is only reached if it were removed.
  return { ...emptyPlan('none'), text: '' };
}

function emptyPlan(decidedBy: string): ReplyPlan {
  return { reasoning: '', text: '', toolCalls: [], delayMs: 0, durationMs: 0, decidedBy, side: false };
}

/** The groups of a matching rule (`[userText]` without a regex), or undefined. */
function matchRule(rule: Rule, conv: Conversation): string[] | undefined {
  const m = rule.match;
  if (!m) return [conv.userText];
  if (m.protocol && !(Array.isArray(m.protocol) ? m.protocol : [m.protocol]).includes(conv.protocol)) return undefined;
  if (m.contains !== undefined && !conv.userText.includes(m.contains)) return undefined;
  if (m.regex !== undefined) {
    const found = new RegExp(m.regex, (m.flags ?? '').replace('g', '')).exec(conv.userText);
    return found ? found.map((g) => g ?? '') : undefined;
  }
  return [conv.userText];
}

/** The step for the rounds of tool results so far; past the last step after a tool call, `DONE …`. */
function stepAt(steps: ReplySpec[], conv: Conversation): ReplySpec {
  if (conv.toolRounds < steps.length) return steps[conv.toolRounds];
  const last = steps[steps.length - 1];
  if (last.writeFile) return { text: `DONE ${last.writeFile.path}` };
  if (last.toolCall) {
    const output = conv.toolResults.at(-1)?.output ?? '';
    const excerpt = output.length > 500 ? `${output.slice(0, 500)}…` : output;
    return { text: excerpt ? `DONE ${last.toolCall.name}: ${excerpt}` : `DONE ${last.toolCall.name}` };
  }
  return last;
}

function planFrom(spec: ReplySpec, conv: Conversation, decidedBy: string): ReplyPlan {
  const plan: ReplyPlan = {
    ...emptyPlan(decidedBy),
    reasoning: spec.reasoning ?? '',
    text: spec.text ?? '',
    delayMs: spec.delayMs ?? 0,
    durationMs: spec.durationMs ?? 0,
  };
  if (spec.error) {
    plan.error = { status: spec.error.status, message: spec.error.message ?? `scripted failure ${spec.error.status}` };
    return plan;
  }
  if (spec.writeFile) {
    const choice = chooseWrite(conv.tools, spec.writeFile.path, spec.writeFile.content, conv.cwd);
    if ('error' in choice) plan.text = joinText(plan.text, choice.error);
    else plan.toolCalls.push(toCall(choice.tool.name, choice.tool.kind, choice.input));
  }
  if (spec.toolCall) {
    const tool = findTool(conv.tools, spec.toolCall.name);
    const args = spec.toolCall.arguments ?? {};
    if (!tool) {
      plan.text = joinText(plan.text, `CALL_TOOL: no tool named ${spec.toolCall.name} among: ${conv.tools.map((t) => t.name).join(', ') || 'no tools'}`);
    } else if (tool.kind === 'function' && typeof args === 'string' && !isJsonObject(args)) {
      plan.text = joinText(plan.text, `CALL_TOOL: ${tool.name} takes a JSON object, got: ${args}`);
    } else {
      plan.toolCalls.push(toCall(tool.name, tool.kind, args));
    }
  }
  return plan;
}

function toCall(name: string, kind: 'function' | 'custom', input: Record<string, unknown> | string) {
  return { id: newCallId(), name, kind, input: typeof input === 'string' ? input : JSON.stringify(input) };
}

function isJsonObject(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v);
  } catch {
    return false;
  }
}

function joinText(a: string, b: string): string {
  return a ? `${a}\n${b}` : b;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Replaces `$&` and `$1`…`$9` in every string of a spec with the regex groups. */
function substitute<T>(value: T, groups: string[]): T {
  if (typeof value === 'string') {
    return value.replace(/\$(&|[1-9])/g, (_, g: string) => (g === '&' ? groups[0] : (groups[Number(g)] ?? ''))) as T;
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, groups)) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, groups)])) as T;
  }
  return value;
}
