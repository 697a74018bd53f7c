import { describeZodError } from '@keelson/schema';
import {
  commandCompletionSchema,
  commandInvokeResultSchema,
  ribCommandDescriptorSchema,
  type CommandCompletion,
  type CommandInvokeResult,
  type CommandRef,
} from '@keelson/ribs-contract';
import type { ActiveRib } from '../activation/activeRib';
import { errorMessage } from '../errors';
import type { WarningSink } from '../warnings';

/** A rib's slash commands, each validated (a malformed one is dropped and warned about). */
export async function listRibCommands(active: ActiveRib, warn: WarningSink): Promise<CommandRef[]> {
  const { rib, ctx, id } = active;
  if (typeof rib.listCommands !== 'function') return [];
  let raw: unknown;
  try {
    raw = await rib.listCommands(ctx);
  } catch (err) {
    warn({ stage: 'runtime', rule: 'commands', ribId: id, message: `listCommands threw: ${errorMessage(err)}` });
    return [];
  }
  if (!Array.isArray(raw)) return [];
  const out: CommandRef[] = [];
  for (const item of raw) {
    const parsed = ribCommandDescriptorSchema.safeParse(item);
    if (parsed.success) out.push({ ...parsed.data, ribId: id });
    else warn({ stage: 'runtime', rule: 'commands', ribId: id, message: `dropped a malformed command: ${describeZodError(parsed.error, 'command')}` });
  }
  return out;
}

/**
 * Resolves a command to its closed effect. The command must be one the rib lists; the result must
 * be well-formed, and an `open-agent` effect may open only the invoking rib's own agents. Every
 * failure is `{ ok: false, error }`.
 */
export async function invokeRibCommand(active: ActiveRib, name: string, arg: string, warn: WarningSink): Promise<CommandInvokeResult> {
  const { rib, ctx, id } = active;
  if (typeof rib.invokeCommand !== 'function') return { ok: false, error: `rib '${id}' has no commands to invoke` };
  const listed = await listRibCommands(active, warn);
  if (!listed.some((c) => c.name === name)) return { ok: false, error: `rib '${id}' has no command '${name}'` };
  let raw: unknown;
  try {
    raw = await rib.invokeCommand(name, arg, ctx);
  } catch (err) {
    warn({ stage: 'runtime', rule: 'commands', ribId: id, message: `invokeCommand('${name}') threw: ${errorMessage(err)}` });
    return { ok: false, error: `command '${name}' failed: ${errorMessage(err)}` };
  }
  const parsed = commandInvokeResultSchema.safeParse(raw);
  if (!parsed.success) {
    warn({ stage: 'runtime', rule: 'commands', ribId: id, message: `invokeCommand('${name}') returned a malformed result: ${describeZodError(parsed.error, 'result')}` });
    return { ok: false, error: `command '${name}' returned a malformed result` };
  }
  const result = parsed.data;
  if (result.ok && result.effect.effect === 'open-agent' && result.effect.ribId !== id) {
    return { ok: false, error: `command '${name}' may open only rib '${id}''s agents, not rib '${result.effect.ribId}''s` };
  }
  return result;
}

/**
 * Argument candidates for a command. The rib is asked with the prefix as typed; it must return
 * the full set for an empty prefix (surfaces fetch once with "" and filter themselves).
 */
export async function completeRibCommand(active: ActiveRib, name: string, prefix: string, warn: WarningSink): Promise<CommandCompletion[]> {
  const { rib, ctx, id } = active;
  if (typeof rib.completeCommand !== 'function') return [];
  let raw: unknown;
  try {
    raw = await rib.completeCommand(name, prefix, ctx);
  } catch (err) {
    warn({ stage: 'runtime', rule: 'commands', ribId: id, message: `completeCommand('${name}') threw: ${errorMessage(err)}` });
    return [];
  }
  if (!Array.isArray(raw)) return [];
  const out: CommandCompletion[] = [];
  for (const item of raw) {
    const parsed = commandCompletionSchema.safeParse(item);
    if (parsed.success) out.push(parsed.data);
  }
  return out;
}
