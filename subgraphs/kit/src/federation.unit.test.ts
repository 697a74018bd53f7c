import 'reflect-metadata';
import { execute, parse, type GraphQLObjectType } from 'graphql';
import { Arg, Field, FieldResolver, ID, ObjectType, Query, Resolver, Root } from 'type-graphql';
import { buildFederatedSchema } from './federation';
import { RequestLoaders } from './loaders';

@ObjectType('KitProbe')
class Probe {
  @Field(() => ID)
  id!: string;

  @Field()
  label!: string;

  @Field({ name: 'shownAs' })
  internalName!: string;

  @Field()
  get shout(): string {
    return this.label.toUpperCase();
  }
}

@Resolver(() => Probe)
class ProbeResolver {
  @Query(() => [Probe])
  kitProbes(): Probe[] {
    return [Object.assign(new Probe(), { id: '1', label: 'one', internalName: 'first' }), Object.assign(new Probe(), { id: '2', label: 'two', internalName: 'second' })];
  }

  @FieldResolver(() => String)
  label(@Root() probe: Probe, @Arg('suffix', () => String, { nullable: true }) suffix?: string | null): string {
    return `${probe.label}${suffix ?? ''}`;
  }
}

describe('buildFederatedSchema', () => {
  it('serves plain property fields with the default resolver and keeps renamed fields, getters and field resolvers', async () => {
    const { schema } = await buildFederatedSchema({ resolvers: [ProbeResolver] });
    const fields = (schema.getType('KitProbe') as GraphQLObjectType).getFields();
    expect(fields.id!.resolve).toBeUndefined();
    // A field whose schema name differs from its property reads the property: type-graphql's resolver stays.
    expect(fields.shownAs!.resolve).toBeDefined();
    expect(fields.label!.resolve).toBeDefined();

    const result = await execute({ schema, document: parse('{ kitProbes { id label(suffix: "!") shownAs shout } }'), contextValue: {} });
    expect(result.errors).toBeUndefined();
    expect(result.data).toEqual({
      kitProbes: [
        { id: '1', label: 'one!', shownAs: 'first', shout: 'ONE' },
        { id: '2', label: 'two!', shownAs: 'second', shout: 'TWO' },
      ],
    });
  });
});

describe('RequestLoaders', () => {
  it('builds a loader set once per request and computes a memo once per key, keeping no throw', () => {
    const loaders = new RequestLoaders();
    let made = 0;
    const make = (ctx: { n: number }) => ({ made: ++made, n: ctx.n });
    expect(loaders.setOf(make, { n: 1 })).toBe(loaders.setOf(make, { n: 2 }));
    expect(made).toBe(1);
    expect(new RequestLoaders().setOf(make, { n: 3 })).toEqual({ made: 2, n: 3 });

    let computed = 0;
    expect(loaders.memo('a', () => ++computed)).toBe(1);
    expect(loaders.memo('a', () => ++computed)).toBe(1);
    expect(loaders.memo('b', () => ++computed)).toBe(2);
    let throws = 0;
    const failing = () => {
      throws += 1;
      throw new Error('bad input');
    };
    expect(() => loaders.memo('c', failing)).toThrow('bad input');
    expect(() => loaders.memo('c', failing)).toThrow('bad input');
    expect(throws).toBe(2);
  });
});
