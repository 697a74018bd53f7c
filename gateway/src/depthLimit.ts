import {
  GraphQLError,
  Kind,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationRule,
} from 'graphql';

interface Depth {
  depth: number;
  /** Response names from the operation root to the deepest field. */
  path: string[];
}

const flat: Depth = { depth: 0, path: [] };

function deeper(a: Depth, b: Depth): Depth {
  return b.depth > a.depth ? b : a;
}

/**
 * A validation rule that rejects an operation whose fields nest deeper than `maxDepth`
 * (`{ a { b } }` is 2 deep). Fragments count where they are spread. Introspection (`__schema`,
 * `__type`) is not counted: its type references nest deep by design, and the gateway serves it on
 * loopback only. The error is `GRAPHQL_VALIDATION_FAILED` (400) and names the deepest path.
 */
export function depthLimitRule(maxDepth: number): ValidationRule {
  return (context) => {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const definition of context.getDocument().definitions) {
      if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
    }
    // A fragment's depth does not depend on where it is spread: measure each once.
    const measured = new Map<string, Depth>();
    const inProgress = new Set<string>();

    const measure = (selectionSet: SelectionSetNode | undefined): Depth => {
      let deepest = flat;
      for (const selection of selectionSet?.selections ?? []) {
        if (selection.kind === Kind.FIELD) {
          if (selection.name.value === '__schema' || selection.name.value === '__type') continue;
          const below = measure(selection.selectionSet);
          const name = selection.alias?.value ?? selection.name.value;
          deepest = deeper(deepest, { depth: below.depth + 1, path: [name, ...below.path] });
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          deepest = deeper(deepest, measure(selection.selectionSet));
        } else {
          const name = selection.name.value;
          // A cycle is NoFragmentCyclesRule's to report; here it only must not recurse forever.
          if (inProgress.has(name)) continue;
          let depth = measured.get(name);
          if (!depth) {
            inProgress.add(name);
            depth = measure(fragments.get(name)?.selectionSet);
            inProgress.delete(name);
            measured.set(name, depth);
          }
          deepest = deeper(deepest, depth);
        }
      }
      return deepest;
    };

    return {
      OperationDefinition(operation) {
        const { depth, path } = measure(operation.selectionSet);
        if (depth <= maxDepth) return;
        const name = operation.name ? `operation "${operation.name.value}"` : 'the operation';
        context.reportError(
          new GraphQLError(
            `${name} nests fields ${depth} deep (at ${path.join('.')}); the gateway accepts at most ${maxDepth}`,
            { nodes: operation, extensions: { code: 'GRAPHQL_VALIDATION_FAILED', status: 400, maxDepth, depth } },
          ),
        );
      },
    };
  };
}
