import { readFileSync } from 'node:fs';
import { scopes } from '@keelson/schema';
import { buildSchema, parse, getOperationAST } from 'graphql';
import { supergraphPath } from '../config';
import { checkScopes, readScopeMap, undeclaredRootFields } from '@keelson/service';
import { supergraphForPlanning } from './securityFeatures';

const sdl = supergraphForPlanning(readFileSync(supergraphPath(), 'utf8'));
const schema = buildSchema(sdl, { assumeValidSDL: true });
const map = readScopeMap(schema);
const caller = (granted: string[]) => ({ subject: 'token:t', kind: 'token' as const, scopes: granted as never });

describe('the scopes declared in the checked-in supergraph', () => {
  it('declares a requirement on every root field of every subgraph', () => {
    expect(undeclaredRootFields(schema, map)).toEqual([]);
    // The walk is real: every query, mutation and subscription field was looked at.
    const roots = [schema.getQueryType()!, schema.getMutationType()!, schema.getSubscriptionType()!].flatMap((t) => Object.keys(t.getFields()).filter((f) => !f.startsWith('_')));
    expect(roots.length).toBeGreaterThan(50);
    expect(roots.every((f) => [...map.fields.keys()].some((k) => k.endsWith(`.${f}`)))).toBe(true);
  });

  it('names only mesh scopes, one per field', () => {
    for (const [field, req] of map.fields) {
      expect({ field, sets: req.scopes.length <= 1, known: req.scopes.flat().every((s) => (scopes as readonly string[]).includes(s)) }).toEqual({ field, sets: true, known: true });
    }
  });

  it('maps the CONTRACT: read for queries and subscriptions, write for projects, operate for runs, admin for tokens', () => {
    const need = (f: string) => map.fields.get(f)?.scopes.flat() ?? [];
    expect(need('Query.projects')).toEqual(['read']);
    expect(need('Subscription.runEvents')).toEqual(['read']);
    expect(need('Mutation.createProject')).toEqual(['write']);
    expect(need('Mutation.ingest')).toEqual(['write']);
    expect(need('Mutation.appendMemory')).toEqual(['write']);
    expect(need('Mutation.startWorkflow')).toEqual(['operate']);
    expect(need('Mutation.sendUserTurn')).toEqual(['operate']);
    expect(need('Mutation.createApiToken')).toEqual(['admin']);
    expect(map.fields.get('Query.viewer')).toEqual({ authenticated: true, scopes: [] });
  });

  it('refuses an operation whose any field needs a scope the caller lacks, through fragments too, naming field and scope', () => {
    const doc = parse('query { projects { id } ...M } fragment M on Query { apiTokens { id } }');
    const op = getOperationAST(doc)!;
    expect(checkScopes(schema, map, doc, op, caller(['read']))?.message).toBe('Query.apiTokens needs scope admin; the caller (token:t) has read');
    expect(checkScopes(schema, map, doc, op, caller(['read', 'write', 'operate', 'admin']))).toBeUndefined();
    const mutation = parse('mutation { createProject(input: { name: "x" }) { id } }');
    const denied = checkScopes(schema, map, mutation, getOperationAST(mutation)!, caller(['read', 'operate']));
    expect(denied?.extensions).toMatchObject({ code: 'FORBIDDEN', status: 403, requiredScopes: [['write']] });
  });
});
