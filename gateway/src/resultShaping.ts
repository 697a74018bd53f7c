import {
  assert,
  ERRORS,
  isCompositeType,
  isCustomScalarType,
  isListType,
  isNonNullType,
  isObjectType,
  isSubtype,
  isEnumType,
  typenameFieldName,
  Variable,
  type CompositeType,
  type FieldSelection,
  type Operation,
  type Schema,
  type SelectionSet,
  type Type,
} from '@apollo/federation-internals';
import { Kind, type DocumentNode } from 'graphql';
import { createRequire } from 'node:module';

/**
 * The gateway's result shaping: what Apollo's `executeQueryPlan` does last — the answers its fetches
 * merged, projected onto the client's operation (its fields in order, aliases, `__typename`,
 * fragments by type, `@skip`/`@include`, non-null violations bubbling up to the nearest nullable
 * parent, leaf values checked against their types). Same inputs, same data and errors as Apollo's
 * `computeResponse` (`resultShaping.unit.test.ts` compares the two on generated answers), at a
 * fraction of its cost: what Apollo works out per object of the answer — each selection's
 * directives, response name, field type and leaf check — is worked out here once per operation and
 * kept with it. Installed by `installResultShaping` (the gateway's start); `KEELSON_GATEWAY_SHAPING=apollo`
 * keeps Apollo's own.
 */

/** computeResponse's argument (`@apollo/gateway`'s `resultShaping`). */
export interface ShapeArgs {
  operation: Operation;
  variables?: Record<string, unknown>;
  input: Record<string, unknown> | null | undefined;
  introspectionHandling: (selection: FieldSelection) => unknown;
}
export interface Shaped {
  data: Record<string, unknown> | null | undefined;
  errors: Error[];
}

/** A `@skip`/`@include` condition: a literal, or the variable it reads. */
type Condition = { literal: boolean } | { variable: string; directive: string };

/** An output type, unwrapped once: what each value of a field needs. */
type Shape =
  | { kind: 'nonNull'; type: Type; of: Shape }
  | { kind: 'list'; type: Type; of: Shape }
  | { kind: 'composite'; type: CompositeType }
  | { kind: 'leaf'; type: Type; valid: (value: unknown) => boolean };

interface FieldStep {
  kind: 'field';
  skip?: Condition;
  include?: Condition;
  responseName: string;
  introspection: boolean;
  typename: boolean;
  shape: Shape;
  /** The leaf check of a field whose type is a leaf or a non-null leaf: its valid values are copied as they are. */
  leaf: ((value: unknown) => boolean) | undefined;
  selection: FieldSelection;
  selectionSet: SelectionSet | undefined;
}
interface FragmentStep {
  kind: 'fragment';
  skip?: Condition;
  include?: Condition;
  typeCondition: CompositeType | undefined;
  selectionSet: SelectionSet;
  /** Whether the condition applies, per `__typename` (or per parent type when the answer has none). */
  applies: Map<string | Type, boolean>;
}
type Step = FieldStep | FragmentStep;

interface Params {
  schema: Schema;
  variables: Record<string, unknown>;
  errors: Error[];
  introspectionHandling: (selection: FieldSelection) => unknown;
}

// Bound once: TypeScript reads an imported name from the module's exports at each use, and
// federation-internals' exports are getters.
const TYPENAME = typenameFieldName;
const failed = (message: string): never => {
  assert(false, message);
  throw new Error(message);
};
const isComposite = isCompositeType;
const isObject = isObjectType;

/** Per selection set (they belong to an operation, itself per schema): its steps. */
const compiled = new WeakMap<SelectionSet, Step[]>();
/** Per operation: its variables' defaults. */
const defaults = new WeakMap<Operation, Record<string, unknown>>();

function condition(directive: { arguments(): { if: boolean | Variable }; toString(): string } | undefined): Condition | undefined {
  if (!directive) return undefined;
  const value = directive.arguments().if;
  return value instanceof Variable ? { variable: value.name, directive: directive.toString() } : { literal: value };
}

function holds(c: Condition, variables: Record<string, unknown>): boolean {
  if ('literal' in c) return c.literal;
  const value = variables[c.variable];
  if (typeof value !== 'boolean') failed(`Unexpected value ${String(value)} for variable $${c.variable} of ${c.directive}`);
  return value as boolean;
}

function skipped(step: Step, variables: Record<string, unknown>): boolean {
  return (step.skip !== undefined && holds(step.skip, variables)) || (step.include !== undefined && !holds(step.include, variables));
}

function shapeOf(schema: Schema, type: Type): Shape {
  if (isNonNullType(type)) return { kind: 'nonNull', type, of: shapeOf(schema, type.ofType) };
  if (isListType(type)) return { kind: 'list', type, of: shapeOf(schema, type.ofType) };
  if (isCompositeType(type)) return { kind: 'composite', type };
  return { kind: 'leaf', type, valid: leafCheck(schema, type) };
}

const INTEGER = /^-?(?:0|[1-9][0-9]*)$/;

/**
 * federation-internals' `isValidLeafValue` for one type, with what it asks of the schema asked once:
 * a custom scalar takes anything; a boolean only Boolean; a finite number Int and ID when integral,
 * Float always; a string an enum's value, or any scalar but Boolean, Int and Float.
 */
function leafCheck(schema: Schema, type: Type): (value: unknown) => boolean {
  if (isCustomScalarType(type)) return () => true;
  const enumType = isEnumType(type) ? type : undefined;
  const boolean = type === schema.booleanType();
  const int = type === schema.intType();
  const integral = int || type === schema.idType();
  const float = type === schema.floatType();
  return (value) => {
    if (typeof value === 'boolean') return boolean;
    if (typeof value === 'number' && Number.isFinite(value)) return integral ? INTEGER.test(String(value)) : float;
    if (typeof value === 'string') return enumType ? enumType.value(value) !== undefined : !boolean && !int && !float;
    return false;
  };
}

function stepsOf(schema: Schema, selectionSet: SelectionSet): Step[] {
  let steps = compiled.get(selectionSet);
  if (steps) return steps;
  steps = selectionSet.selections().map((selection): Step => {
    const element = selection.element;
    const skip = condition(element.appliedDirectivesOf(schema.skipDirective())[0]);
    const include = condition(element.appliedDirectivesOf(schema.includeDirective())[0]);
    if (selection.kind === 'FieldSelection') {
      const field = selection.element;
      const shape = shapeOf(schema, field.definition.type!);
      return {
        kind: 'field',
        skip,
        include,
        responseName: field.responseName(),
        introspection: field.definition.isSchemaIntrospectionField(),
        typename: field.name === typenameFieldName,
        shape,
        leaf: shape.kind === 'leaf' ? shape.valid : shape.kind === 'nonNull' && shape.of.kind === 'leaf' ? shape.of.valid : undefined,
        selection,
        selectionSet: selection.selectionSet,
      };
    }
    return { kind: 'fragment', skip, include, typeCondition: selection.element.typeCondition, selectionSet: selection.selectionSet, applies: new Map() };
  });
  compiled.set(selectionSet, steps);
  return steps;
}

const own = Object.prototype.hasOwnProperty;
const getOwn = (object: Record<string, unknown>, key: string): unknown => (own.call(object, key) ? object[key] : undefined);

/** Drop-in for Apollo's `computeResponse` (same arguments, same answer). */
export function shapeResponse({ operation, variables, input, introspectionHandling }: ShapeArgs): Shaped {
  if (!input) return { data: input, errors: [] };
  const schema = operation.schema();
  let defaulted = defaults.get(operation);
  if (!defaulted) defaults.set(operation, (defaulted = operation.collectDefaultedVariableValues()));
  const params: Params = { schema, variables: Object.assign(Object.create(null) as Record<string, unknown>, defaulted, variables), errors: [], introspectionHandling };
  const data = Object.create(null) as Record<string, unknown>;
  const root = schema.schemaDefinition.rootType(operation.rootKind)!;
  const bubbled = apply(input, operation.selectionSet, data, params, [], root);
  return { data: bubbled ? null : data, errors: params.errors };
}

/** Applies a selection set to one object of the answer; true when a non-null violation bubbles up past it. */
function apply(input: Record<string, unknown>, selectionSet: SelectionSet, output: Record<string, unknown>, params: Params, path: (string | number)[], parentType: Type): boolean {
  for (const step of stepsOf(params.schema, selectionSet)) {
    if ((step.skip || step.include) && skipped(step, params.variables)) continue;
    if (step.kind === 'field') {
      const name = step.responseName;
      const outputValue = output[name];
      if (step.introspection) {
        if (outputValue === undefined) output[name] = params.introspectionHandling(step.selection);
        continue;
      }
      let inputValue = getOwn(input, name) ?? null;
      if (step.typename) {
        if (outputValue === undefined) {
          if (inputValue === null && name !== TYPENAME) inputValue = input[TYPENAME] ?? null;
          const type = typeof inputValue === 'string' ? (params.schema.type(inputValue) ?? parentType) : parentType;
          if (!isObject(type)) return true;
          output[name] = type.name;
        }
        continue;
      }
      // The common case, a valid leaf seen first: what the general path below would store.
      if (step.leaf !== undefined && outputValue === undefined && inputValue !== null && step.leaf(inputValue)) {
        output[name] = inputValue;
        continue;
      }
      path.push(name);
      const result = value(outputValue, step.shape, inputValue, step.selectionSet, path, params, parentType);
      output[name] = result.updated;
      path.pop();
      if (result.invalid) return true;
    } else {
      const typename = input[TYPENAME];
      if (typename && typeof typename !== 'string') failed(`Got unexpected value for __typename: ${String(typename)}`);
      if (applies(step, params.schema, typename as string | undefined, parentType)) {
        if (apply(input, step.selectionSet, output, params, path, step.typeCondition ?? parentType)) return true;
      }
    }
  }
  return false;
}

function applies(step: FragmentStep, schema: Schema, typename: string | undefined, parentType: Type): boolean {
  const condition = step.typeCondition;
  if (!condition) return true;
  const key = typename || parentType;
  let yes = step.applies.get(key);
  if (yes === undefined) {
    if (typename) {
      const type = schema.type(typename);
      yes = !!type && isSubtype(condition, type);
    } else {
      yes = isSubtype(condition, parentType);
    }
    step.applies.set(key, yes);
  }
  return yes;
}

function describe(path: (string | number)[], currentType: Type, parentType: Type): string {
  const element = path[path.length - 1];
  assert(element !== undefined, 'Should not have been called on an empty path');
  return typeof element === 'string' ? `field ${String(parentType)}.${element}` : `array element of type ${String(currentType)} at index ${element}`;
}

interface Updated {
  updated: unknown;
  invalid?: boolean;
  errors?: boolean;
}

/** One value of the answer, shaped by its type; merged into what an earlier selection of the same response name left. */
function value(outputValue: unknown, shape: Shape, inputValue: unknown, selectionSet: SelectionSet | undefined, path: (string | number)[], params: Params, parentType: Type): Updated {
  if (inputValue === undefined) failed('Should not pass undefined for `inputValue` to this method');
  if (outputValue === null || (outputValue !== undefined && !selectionSet)) return { updated: outputValue };
  switch (shape.kind) {
    case 'nonNull': {
      const inner = value(outputValue, shape.of, inputValue, selectionSet, path, params, parentType);
      if (inner.updated === null) {
        if (!inner.errors) params.errors.push(graphqlError(`Cannot return null for non-nullable ${describe(path, shape.of.type, parentType)}.`, path));
        return { updated: null, invalid: true, errors: true };
      }
      return { updated: inner.updated };
    }
    case 'list': {
      if (inputValue === null) return { updated: null };
      if (!Array.isArray(inputValue)) failed(`Invalid non-list value ${String(inputValue)} returned by subgraph for list type ${String(shape.type)}`);
      if (outputValue !== undefined && !Array.isArray(outputValue)) failed(`Invalid non-list value ${String(outputValue)} returned by subgraph for list type ${String(shape.type)}`);
      const input = inputValue as unknown[];
      const outputs = outputValue as unknown[] | undefined;
      if (outputs !== undefined && input.length !== outputs.length) failed(`[${String(input)}].length (${input.length}) !== [${String(outputs)}].length (${outputs.length})`);
      let nullify = false;
      let errors = false;
      const updated = new Array<unknown>(input.length);
      for (let i = 0; i < input.length; i++) {
        path.push(i);
        const element = value(outputs ? outputs[i] : undefined, shape.of, input[i], selectionSet, path, params, parentType);
        path.pop();
        nullify ||= !!element.invalid;
        errors ||= !!element.errors;
        updated[i] = element.updated;
      }
      return { updated: nullify ? null : updated, errors };
    }
    case 'composite': {
      if (inputValue === null) return { updated: null };
      if (!selectionSet) return failed(`Invalid empty selection set for composite type ${String(shape.type)}`);
      if (typeof inputValue !== 'object') failed(`Invalid non-object value ${String(inputValue)} returned by subgraph for composite type ${String(shape.type)}`);
      if (outputValue !== undefined && typeof outputValue !== 'object') failed(`Invalid non-object value ${String(inputValue)} returned by subgraph for composite type ${String(shape.type)}`);
      const object = inputValue as Record<string, unknown>;
      const inputTypename = object[TYPENAME];
      if (inputTypename !== undefined && typeof inputTypename !== 'string') failed(`Invalid non-string value ${String(inputTypename)} for __typename at ${String(path)}`);
      let objectType: Type = shape.type;
      if (inputTypename) {
        const named = params.schema.type(inputTypename as string);
        if (!named || !isComposite(named)) {
          params.errors.push(graphqlError(`Invalid __typename found for object at ${describe(path, shape.type, parentType)}.`, path));
          return { updated: null, errors: true };
        }
        objectType = named;
      }
      const output = (outputValue ?? Object.create(null)) as Record<string, unknown>;
      const bubbled = apply(object, selectionSet, output, params, path, objectType);
      return { updated: bubbled ? null : output, errors: bubbled };
    }
    case 'leaf': {
      if (inputValue === null) return { updated: null };
      if (outputValue !== undefined) failed(`Excepted output to be undefined but got ${String(shape.type)} for type ${String(shape.type)}`);
      if (shape.valid(inputValue)) return { updated: inputValue, errors: false };
      params.errors.push(graphqlError(`Invalid value found for ${describe(path, shape.type, parentType)}.`, path));
      return { updated: null, errors: true };
    }
  }
}

/** Apollo's INVALID_GRAPHQL error, as its shaping raises it. */
function graphqlError(message: string, path: (string | number)[]): Error {
  return ERRORS.INVALID_GRAPHQL.err(message, { path: Array.from(path) });
}

/** Apollo's own `computeResponse`, as `@apollo/gateway` exports it to its `executeQueryPlan`. */
const gatewayRequire = createRequire(require.resolve('@apollo/gateway'));
const apolloShaping = gatewayRequire('./resultShaping') as { computeResponse: (args: ShapeArgs) => Shaped };
export const apolloComputeResponse = apolloShaping.computeResponse;

type OperationFromDocument = (schema: Schema, document: DocumentNode, options?: { operationName?: string; validate?: boolean }) => Operation;
/** federation-internals' operations module, whose `operationFromDocument` its index re-exports (read at each call). */
const operations = createRequire(gatewayRequire.resolve('@apollo/federation-internals'))('./operations') as { operationFromDocument: OperationFromDocument };
const apolloOperationFromDocument = operations.operationFromDocument;

/** Per client operation (its definition node, kept by Apollo Server's document cache per query text): the operation built for it. */
const built = new WeakMap<object, { schema: Schema; fragments: readonly unknown[]; operation: Operation }>();

/**
 * `operationFromDocument` as `executeQueryPlan` calls it (without validation, the operation's
 * definition first, its fragments after — all nodes of the client's parsed document), answered once
 * per operation and schema instead of per request: an `Operation` is only read afterwards (the
 * shaping; `@defer` conditions read its variables). Every other call is Apollo's own.
 */
const keptOperationFromDocument: OperationFromDocument = (schema, document, options) => {
  const [first, ...fragments] = document.definitions;
  if (options?.validate !== false || options.operationName !== undefined || first?.kind !== Kind.OPERATION_DEFINITION) {
    return apolloOperationFromDocument(schema, document, options);
  }
  const kept = built.get(first);
  if (kept && kept.schema === schema && kept.fragments.length === fragments.length && kept.fragments.every((f, i) => f === fragments[i])) return kept.operation;
  const operation = apolloOperationFromDocument(schema, document, options);
  built.set(first, { schema, fragments, operation });
  return operation;
};

/**
 * Makes `executeQueryPlan` shape results with `shapeResponse` and build each client operation once
 * (it calls `computeResponse` and `operationFromDocument` through their modules' exports, which are
 * plain properties). Idempotent; `apollo` restores Apollo's own.
 */
export function installResultShaping(which: 'keelson' | 'apollo'): void {
  apolloShaping.computeResponse = which === 'keelson' ? shapeResponse : apolloComputeResponse;
  operations.operationFromDocument = which === 'keelson' ? keptOperationFromDocument : apolloOperationFromDocument;
}
