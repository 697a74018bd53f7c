import { swarmInputBounds, swarmLimitBounds } from '@keelson/schema';
import { Field, ID, InputType, Int, registerEnumType } from 'type-graphql';

export const SwarmSizeEnum = { SMALL: 'SMALL', MEDIUM: 'MEDIUM', LARGE: 'LARGE' } as const;
registerEnumType(SwarmSizeEnum, { name: 'SwarmSize', description: 'A preset of limits (SMALL: 3 agents and 20 turns, MEDIUM: 5 and 40, LARGE: 8 and 80); explicit limits win.' });
export const SwarmWorkToolsEnum = { NONE: 'NONE', READ: 'READ' } as const;
registerEnumType(SwarmWorkToolsEnum, { name: 'SwarmWorkTools', description: 'READ: agents may read the project (Read, Glob, Grep), confined to its root.' });

const range = (name: keyof typeof swarmLimitBounds) => `${swarmLimitBounds[name].min} to ${swarmLimitBounds[name].max} (default ${swarmLimitBounds[name].default})`;

@InputType({ description: 'One item of evidence, snapshotted by the caller and stored verbatim (the swarm never fetches).' })
export class SwarmEvidenceInput {
  @Field({ description: `One line, at most ${swarmInputBounds.titleChars} characters.` })
  title!: string;

  @Field(() => String, { nullable: true, description: 'An http or https URL.' })
  sourceUrl?: string | null;

  @Field({ description: 'The body, verbatim (issue text, a diff, check results…).' })
  body!: string;
}

@InputType()
export class SwarmLimitsInput {
  @Field(() => Int, { nullable: true, description: `Agents, the lead included: ${range('maxAgents')}.` })
  maxAgents?: number | null;

  @Field(() => Int, { nullable: true, description: `Turns of the whole swarm: ${range('maxTurns')}.` })
  maxTurns?: number | null;

  @Field(() => Int, { nullable: true, description: `Turns of one agent: ${range('maxTurnsPerAgent')}.` })
  maxTurnsPerAgent?: number | null;

  @Field(() => Int, { nullable: true, description: `One turn's timeout, in seconds: ${range('turnTimeoutS')}.` })
  turnTimeoutS?: number | null;

  @Field(() => Int, { nullable: true, description: `Wall clock, in minutes: ${range('maxMinutes')}.` })
  maxMinutes?: number | null;
}

@InputType({ description: 'A worker that joins with the lead.' })
export class SwarmAgentInput {
  @Field({ description: 'a-z, 0-9 and "-", 1 to 20 characters, starting with a letter.' })
  name!: string;

  @Field()
  role!: string;
}

@InputType({ description: 'What starting a swarm takes (the same as the chat_swarm_start tool).' })
export class StartSwarmInput {
  @Field({ description: `The task: 1 to ${swarmInputBounds.taskChars} characters.` })
  task!: string;

  @Field(() => ID, { nullable: true })
  projectId?: string | null;

  @Field(() => [SwarmEvidenceInput], { nullable: true, description: `At most ${swarmInputBounds.evidenceItems} items, ${swarmInputBounds.evidenceChars} characters together.` })
  evidence?: SwarmEvidenceInput[] | null;

  @Field(() => SwarmSizeEnum, { nullable: true })
  size?: keyof typeof SwarmSizeEnum | null;

  @Field(() => SwarmLimitsInput, { nullable: true })
  limits?: SwarmLimitsInput | null;

  @Field(() => SwarmWorkToolsEnum, { nullable: true })
  workTools?: keyof typeof SwarmWorkToolsEnum | null;

  @Field(() => Boolean, { nullable: true, description: 'Write mode: the lead chooses writers, each with a worktree of its own (needs a git project).' })
  writeMode?: boolean | null;

  @Field(() => [SwarmAgentInput], { nullable: true, description: 'Workers that join with the lead (the lead can spawn more).' })
  agents?: SwarmAgentInput[] | null;

  @Field(() => String, { nullable: true, description: 'A provider hint.' })
  provider?: string | null;

  @Field(() => String, { nullable: true, description: 'The lead\'s model (and the workers\', unless workerModel).' })
  model?: string | null;

  @Field(() => String, { nullable: true })
  workerModel?: string | null;
}
