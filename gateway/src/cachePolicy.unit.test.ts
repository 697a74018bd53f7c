import { readFileSync } from 'node:fs';
import { Supergraph } from '@apollo/federation-internals';
import { supergraphForPlanning } from './auth/securityFeatures';
import { changesOf, classifyFetch, subgraphsOfStream } from './cachePolicy';
import { supergraphPath } from './config';

const supergraph = Supergraph.build(supergraphForPlanning(readFileSync(supergraphPath(), 'utf8')));
const schemaOf = (name: string) => supergraph.subgraphs().get(name)!.schema.toGraphQLJSSchema();

describe('the entity cache policy', () => {
  const projects = schemaOf('projects');
  const runs = schemaOf('runs');

  it('caches the planner\'s fetches that select only evented fields', () => {
    expect(classifyFetch('projects', projects, '{ projects { __typename id name trusted } }')).toEqual({ kind: 'cacheable', fields: new Set(['Query.projects', 'Project.id', 'Project.name', 'Project.trusted']) });
    expect(
      classifyFetch(
        'runs',
        runs,
        'query Q__runs__1($representations: [_Any!]!, $f: Int) { _entities(representations: $representations) { ... on Project { runs(first: $f) { edges { node { id status nodes { id status attempt } project { __typename id } } } } } } }',
      ),
    ).toEqual({
      kind: 'cacheable',
      fields: new Set(['Query._entities', 'Project.runs', 'RunConnection.edges', 'RunEdge.node', 'Run.id', 'Run.status', 'Run.nodes', 'RunNode.id', 'RunNode.status', 'RunNode.attempt', 'Run.project', 'Project.id']),
    });
  });

  it('leaves uncached a field read outside the event log, a subgraph without a policy, and what does not parse', () => {
    expect(classifyFetch('projects', projects, '{ projects { id isGitRepo } }')).toEqual({ kind: 'uncached' });
    expect(classifyFetch('projects', projects, '{ projects { id mutationLock { holder } } }')).toEqual({ kind: 'uncached' });
    expect(
      classifyFetch('runs', runs, 'query ($representations: [_Any!]!) { _entities(representations: $representations) { ... on Project { runs { edges { node { id cwd } } } } } }'),
    ).toEqual({ kind: 'uncached' });
    expect(classifyFetch('memory', schemaOf('memory'), '{ __typename }')).toEqual({ kind: 'uncached' });
    expect(classifyFetch('projects', projects, '{ projects { id')).toEqual({ kind: 'uncached' });
    expect(classifyFetch('projects', projects, 'subscription { projectEvents { cursor } }')).toEqual({ kind: 'uncached' });
  });

  it('tells evented mutations from the rest', () => {
    expect(classifyFetch('projects', projects, 'mutation ($id: ID!) { setProjectTrust(projectId: $id, trusted: true) { id trusted } }')).toEqual({
      kind: 'mutation',
      evented: true,
      changes: new Set(['Project.trusted', 'Project.trustedWorkflowsDigest']),
    });
    expect(classifyFetch('projects', projects, 'mutation ($id: ID!) { releaseMutationLock(id: $id) }')).toEqual({ kind: 'mutation', evented: true, changes: new Set() });
    expect(classifyFetch('projects', projects, 'mutation ($id: ID!) { releaseMutationLock(id: $id) setProjectTrust(projectId: $id, trusted: true) { id } }')).toEqual({
      kind: 'mutation',
      evented: true,
      changes: new Set(['Project.trusted', 'Project.trustedWorkflowsDigest']),
    });
    expect(classifyFetch('projects', projects, 'mutation ($id: ID!) { toString: setProjectTrust(projectId: $id, trusted: true) { id } constructor { id } }')).toEqual({ kind: 'mutation', evented: false });
    expect(classifyFetch('projects', projects, 'mutation { createProject(input: { name: "x" }) { id } }')).toEqual({ kind: 'mutation', evented: false });
    expect(classifyFetch('runs', runs, 'mutation { startWorkflow(name: "x") { id } }')).toEqual({ kind: 'mutation', evented: false });
  });

  it('names the fields an event type changes: none for leases and locks, the trust fields for trust, everything for a new project, an unknown type or none', () => {
    expect(changesOf('projects', 'projects', 'PROJECT_TRUSTED')).toEqual(['Project.trusted', 'Project.trustedWorkflowsDigest']);
    expect(changesOf('projects', 'projects', 'PROJECT_UNTRUSTED')).toEqual(['Project.trusted', 'Project.trustedWorkflowsDigest']);
    expect(changesOf('projects', 'projects', 'MUTATION_LOCK_ACQUIRED')).toEqual([]);
    expect(changesOf('projects', 'projects', 'WORKSPACE_RELEASED')).toEqual([]);
    expect(changesOf('projects', 'projects', 'PROJECT_CREATED')).toBeUndefined();
    expect(changesOf('projects', 'projects', 'PROJECT_CLONED')).toBeUndefined();
    expect(changesOf('projects', 'projects', 'toString')).toBeUndefined();
    expect(changesOf('projects', 'projects', undefined)).toBeUndefined();
    expect(changesOf('runs', 'runs', 'NODE_STARTED')).toBeUndefined();
    expect(changesOf('projects', 'runs', 'PROJECT_TRUSTED')).toBeUndefined();
  });

  it('maps a stream to the subgraphs whose entries its events drop', () => {
    expect(subgraphsOfStream('projects')).toEqual(['projects']);
    expect(subgraphsOfStream('runs')).toEqual(['runs']);
    expect(subgraphsOfStream('chats')).toEqual([]);
  });
});
