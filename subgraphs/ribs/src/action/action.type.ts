import { JSONScalar } from '@keelson/kit';
import { Field, ObjectType } from 'type-graphql';

@ObjectType({ description: "What a rib's onAction returned: `{ ok: true, data? }` or `{ ok: false, error }`." })
export class RibActionResult {
  @Field()
  ok!: boolean;

  @Field(() => JSONScalar, {
    nullable: true,
    description: 'The rib\'s data. When it carries a client effect (open-chat, run-workflow, open-canvas, open-surface, open-run) it is validated; a canvas reply keeps only open-canvas and open-chat.',
  })
  data!: unknown;

  @Field(() => String, { nullable: true, description: 'The client effect `data` carries, if any.' })
  effect!: string | null;

  @Field(() => String, { nullable: true })
  error!: string | null;
}

@ObjectType({ description: 'A seed for a fresh chat: system prompt, name, and optionally an opening prompt and a model.' })
export class OpenChatSeed {
  @Field()
  systemPrompt!: string;

  @Field()
  name!: string;

  @Field(() => String, { nullable: true })
  openingPrompt!: string | null;

  @Field(() => String, { nullable: true })
  model!: string | null;

  @Field(() => String, { nullable: true })
  providerId!: string | null;
}
