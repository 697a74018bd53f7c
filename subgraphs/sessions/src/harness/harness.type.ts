import { Directive, Field, ID, ObjectType } from 'type-graphql';

@ObjectType({ description: 'Why a capability is off on this node.' })
export class CapabilityReason {
  @Field()
  capability!: string;

  @Field()
  reason!: string;
}

@ObjectType({ description: 'What a harness can do on this node, computed when read (never aspirations).' })
export class HarnessCapabilities {
  @Field({ description: "interruptSession kills the in-flight turn's process group." })
  interrupt!: boolean;

  @Field({ description: 'Turns resume the native session (sendUserTurn, resumeSession).' })
  resume!: boolean;

  @Field({ description: 'Permission requests surface as ApprovalRequest and resolveApproval answers them.' })
  approvals!: boolean;

  @Field({ description: "The CLI's output streams as HarnessEvents while the turn runs." })
  liveStream!: boolean;

  @Field({ description: "sessions lists the harness's native store." })
  listSessions!: boolean;

  @Field({ description: 'startSession can pin a new native id.' })
  startSession!: boolean;

  @Field({ description: 'sendUserTurn accepts attachments (files inside the session directory).' })
  attachments!: boolean;

  @Field({ description: 'Input reaches a running turn: steerSession goes into the live turn (ACCEPTED) instead of waiting as the next turn (QUEUED).' })
  midTurnInput!: boolean;

  @Field({
    description:
      "A tool the CLI may not use waits for answerApproval before it runs, in the same turn (claude-code's permission hook); false: it is reported after the turn, and an approval re-runs it as a next turn.",
  })
  approvalsBeforeTool!: boolean;

  @Field(() => [CapabilityReason], { description: 'One reason per capability that is false.' })
  reasons!: CapabilityReason[];
}

@ObjectType({ description: 'Whether runTask can run this harness, and why not.' })
export class TaskExecutorInfo {
  @Field()
  implemented!: boolean;

  @Field(() => String, { nullable: true })
  reason!: string | null;
}

@ObjectType({ description: 'A coding-agent CLI the control plane drives (one of the eight harness ids).' })
@Directive('@key(fields: "id")')
export class Harness {
  @Field(() => ID, { description: 'claude-code, grok-build, kimi-code, hermes, codex, opencode, pi or qwen-code.' })
  id!: string;

  @Field()
  displayName!: string;
}
