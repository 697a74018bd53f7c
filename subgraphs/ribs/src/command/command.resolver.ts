import { parseInput, RequiresScope } from '@keelson/kit';
import type { CommandInvokeResult as HostInvokeResult } from '@keelson/ribs-contract';
import { Arg, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import type { RibsContext } from '../context';
import { commandArgSchema, commandNameSchema, ribIdSchema } from '../inputs';
import { CommandCompletion, CommandEffect, CommandInvokeResult } from './command.type';

function toInvokeResult(result: HostInvokeResult): CommandInvokeResult {
  if (!result.ok) return Object.assign(new CommandInvokeResult(), { ok: false, effect: null, error: result.error });
  const e = result.effect;
  const effect = Object.assign(new CommandEffect(), {
    effect: e.effect,
    markdown: e.effect === 'message' ? e.markdown : null,
    ribId: e.effect === 'open-agent' ? e.ribId : null,
    slug: e.effect === 'open-agent' ? e.slug : null,
    workflow: e.effect === 'run-workflow' ? e.workflow : null,
    args: e.effect === 'run-workflow' ? (e.args ?? null) : null,
  });
  return Object.assign(new CommandInvokeResult(), { ok: true, effect, error: null });
}

@Resolver()
export class CommandResolver {
  @RequiresScope('write')
  @Mutation(() => CommandInvokeResult, {
    description: 'Resolve a slash command to the closed effect the surface performs (side-effect free on the rib\'s part); a failure is `ok: false`.',
  })
  async invokeCommand(
    @Ctx() ctx: RibsContext,
    @Arg('ribId', () => ID) ribId: string,
    @Arg('name', () => String) name: string,
    @Arg('arg', () => String) arg: string,
  ): Promise<CommandInvokeResult> {
    const id = parseInput(ribIdSchema, ribId, 'ribId');
    return toInvokeResult(await ctx.services.host.invokeCommand(id, parseInput(commandNameSchema, name, 'name'), parseInput(commandArgSchema, arg, 'arg')));
  }

  @RequiresScope('read')
  @Query(() => [CommandCompletion], { description: 'Argument type-ahead for a command; an empty prefix returns the full candidate set.' })
  async completeCommand(
    @Ctx() ctx: RibsContext,
    @Arg('ribId', () => ID) ribId: string,
    @Arg('name', () => String) name: string,
    @Arg('prefix', () => String) prefix: string,
  ): Promise<CommandCompletion[]> {
    const id = parseInput(ribIdSchema, ribId, 'ribId');
    const completions = await ctx.services.host.completeCommand(id, parseInput(commandNameSchema, name, 'name'), parseInput(commandArgSchema, prefix, 'prefix'));
    return completions.map((c) => Object.assign(new CommandCompletion(), { value: c.value, description: c.description ?? null }));
  }
}
