import { JSONScalar } from '@keelson/kit';
import { Directive, Field, ID, ObjectType } from 'type-graphql';
import { WorkflowScopeEnum } from '../run/run.enums';
import type { CatalogEntry, CatalogLoadError, WorkflowScope } from '@keelson/runs';

@ObjectType('WorkflowInput', { description: 'A string input a workflow declares.' })
export class WorkflowInputType {
  @Field()
  name!: string;

  @Field(() => String, { nullable: true })
  description!: string | null;

  @Field()
  required!: boolean;

  @Field(() => String, { nullable: true })
  default!: string | null;
}

/** A catalog entry: a valid definition and where it came from. */
@ObjectType('WorkflowDefinition', { description: 'A workflow of the catalog: a validated DAG definition and its provenance.' })
@Directive('@key(fields: "name")')
export class WorkflowDefinitionType {
  @Field({
    description:
      'What startWorkflow takes. A project workflow whose name a rib, bundled or home workflow already has is listed as `project:<declaredName>`; it never shadows that one.',
  })
  name!: string;

  @Field({ description: 'The name its definition declares (differs from name only for a qualified project workflow).' })
  declaredName!: string;

  @Field(() => String, { nullable: true })
  description!: string | null;

  @Field(() => ID, { nullable: true, description: 'The rib that contributed it (RIB scope only).' })
  ribId!: string | null;

  @Field({ description: 'The text it was read from: YAML/JSON as written, or JSON for a rib\'s code entry.' })
  source!: string;

  @Field(() => JSONScalar, { description: 'The validated definition, defaults applied.' })
  definition!: unknown;

  @Field(() => WorkflowScopeEnum)
  scope!: WorkflowScope;

  @Field(() => String, { nullable: true, description: 'The file, for BUNDLED, GLOBAL, PROJECT and rib YAML entries.' })
  path!: string | null;

  @Field(() => [WorkflowInputType])
  inputs!: WorkflowInputType[];

  @Field({ description: 'Starting it needs a projectId.' })
  requiresProject!: boolean;

  @Field({ description: 'Runs in a leased git worktree of the project.' })
  worktree!: boolean;
}

@ObjectType('WorkflowLoadError', { description: 'A definition the catalog rejected, naming the field and the reason.' })
export class WorkflowLoadErrorType {
  @Field(() => WorkflowScopeEnum)
  scope!: WorkflowScope;

  @Field(() => String, { nullable: true })
  path!: string | null;

  @Field(() => ID, { nullable: true })
  ribId!: string | null;

  @Field()
  message!: string;
}

export function toWorkflowDefinition(e: CatalogEntry): WorkflowDefinitionType {
  return Object.assign(new WorkflowDefinitionType(), {
    name: e.name,
    declaredName: e.definition.name,
    description: e.definition.description ?? null,
    ribId: e.ribId ?? null,
    source: e.source,
    definition: e.definition,
    scope: e.scope,
    path: e.path ?? null,
    inputs: Object.entries(e.definition.inputs).map(([name, spec]) =>
      Object.assign(new WorkflowInputType(), { name, description: spec.description ?? null, required: spec.required, default: spec.default ?? null }),
    ),
    requiresProject: e.definition.requiresProject,
    worktree: e.definition.worktree.enabled,
  });
}

export function toLoadError(e: CatalogLoadError): WorkflowLoadErrorType {
  return Object.assign(new WorkflowLoadErrorType(), { scope: e.scope, path: e.path ?? null, ribId: e.ribId ?? null, message: e.message });
}
