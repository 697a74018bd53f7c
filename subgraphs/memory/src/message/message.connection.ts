import { Field, ObjectType } from 'type-graphql';
import { z } from 'zod';
import { PageInfo } from '@keelson/kit';
import { MemoryMessage } from './message.entity';

@ObjectType()
export class MessageEdge {
  @Field({ description: 'Opaque; pass as `after` to continue after this message.' })
  cursor!: string;

  @Field(() => MemoryMessage)
  node!: MemoryMessage;
}

@ObjectType({ description: "A page of a conversation's messages, in conversation order." })
export class MessageConnection {
  @Field(() => [MessageEdge])
  edges!: MessageEdge[];

  @Field(() => PageInfo)
  pageInfo!: PageInfo;
}

/** `first` (default 50, at most 500) and `after` (a cursor from this connection). */
export const messagePageArgsSchema = z.object({
  first: z.number().int().min(0, 'must be at least 0').max(500, 'must be at most 500').nullish().transform((v) => v ?? 50),
  after: z
    .string()
    .regex(/^(0|[1-9][0-9]{0,14})$/, 'expected a cursor previously received from this connection')
    .nullish()
    .transform((v) => (v == null ? 0 : Number(v))),
});

export function toConnection(messages: MemoryMessage[], hasNextPage: boolean): MessageConnection {
  const edges = messages.map((node) => ({ cursor: String(node.seq), node }));
  return { edges, pageInfo: { hasNextPage, endCursor: edges.at(-1)?.cursor ?? null } };
}
