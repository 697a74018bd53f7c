import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import { Conversation } from '../conversation/conversation.entity';

@InputType({ description: "A summary of a conversation's messages fromSeq..toSeq (inclusive); one per range." })
export class SummaryInput {
  @Field(() => ID)
  conversationId!: string;

  @Field(() => Int)
  fromSeq!: number;

  @Field(() => Int)
  toSeq!: number;

  @Field()
  content!: string;

  @Field(() => String, { nullable: true, description: 'The model that wrote it.' })
  model?: string | null;
}

@ObjectType({ description: "A range of a conversation's messages (inclusive) that no summary covers yet." })
export class ConversationRange {
  @Field(() => ID)
  conversationId!: string;

  @Field(() => Conversation)
  conversation!: Conversation;

  @Field(() => Int)
  fromSeq!: number;

  @Field(() => Int)
  toSeq!: number;
}
