import { z } from 'zod';
import {
  bannerRegionSchema,
  canvasKindSchema,
  effectiveCadenceMs,
  headActionSchema,
  isInRibNamespace,
  ribClientEffectSchema,
  ribDisplayNameSchema,
  ribDocsSourceSchema,
  ribIdFromKey,
  ribIdSchema,
  ribIngestPayloadSchema,
  ribSurfaceDescriptorSchema,
  surfaceRegionSchema,
  toolFamily,
  type Rib,
  type ToolDefinition,
} from './index';

const ok = (schema: z.ZodType, value: unknown) => schema.safeParse(value).success;
const messages = (schema: z.ZodType, value: unknown) => schema.safeParse(value).error?.issues.map((i) => i.message).join('; ') ?? '';

describe('rib ids and display names', () => {
  it.each(['demo', 'a', 'rib-2', 'x'.repeat(64)])('accepts the rib id %j', (id) => expect(ok(ribIdSchema, id)).toBe(true));
  it.each(['', 'Demo', '2fa', '-x', 'a_b', 'a b', 'x'.repeat(65)])('rejects the rib id %j', (id) => expect(ok(ribIdSchema, id)).toBe(false));
  it('takes a displayName of 1 to 80 characters', () => {
    expect(ok(ribDisplayNameSchema, 'D')).toBe(true);
    expect(ok(ribDisplayNameSchema, 'D'.repeat(80))).toBe(true);
    expect(ok(ribDisplayNameSchema, '')).toBe(false);
    expect(ok(ribDisplayNameSchema, 'D'.repeat(81))).toBe(false);
  });
});

describe('namespaces', () => {
  it('owns rib:<id> and rib:<id>:*, and nothing that merely shares a prefix', () => {
    expect(isInRibNamespace('demo', 'rib:demo')).toBe(true);
    expect(isInRibNamespace('demo', 'rib:demo:board')).toBe(true);
    expect(isInRibNamespace('demo', 'rib:demo:')).toBe(false);
    expect(isInRibNamespace('demo', 'rib:demo-x')).toBe(false);
    expect(isInRibNamespace('demo', 'rib:other:board')).toBe(false);
    expect(isInRibNamespace('demo', 'keelson:ribs')).toBe(false);
  });
  it('reads the owning rib off a key', () => {
    expect(ribIdFromKey('rib:demo:x:y')).toBe('demo');
    expect(ribIdFromKey('rib:demo')).toBe('demo');
    expect(ribIdFromKey('demo')).toBeNull();
  });
});

describe('canvasKind', () => {
  it('is the closed markdown / view / html / log enum', () => {
    expect(canvasKindSchema.options).toEqual(['markdown', 'view', 'html', 'log']);
    expect(ok(canvasKindSchema, 'pdf')).toBe(false);
  });
});

describe('surface regions', () => {
  it('takes a cadenceMs that is an integer of at least 30000', () => {
    expect(ok(surfaceRegionSchema, { key: 'rib:d', cadenceMs: 30_000 })).toBe(true);
    expect(messages(surfaceRegionSchema, { key: 'rib:d', cadenceMs: 29_999 })).toMatch(/at least 30000/);
    expect(messages(surfaceRegionSchema, { key: 'rib:d', cadenceMs: 30_000.5 })).toMatch(/integer/);
  });

  it('floors the effective cadence at 30 s and runs idle regions six times slower', () => {
    expect(effectiveCadenceMs({ cadenceMs: 60_000 })).toBe(60_000);
    expect(effectiveCadenceMs({ cadenceMs: 60_000 }, true)).toBe(360_000);
    expect(effectiveCadenceMs({ cadenceMs: 1_000 })).toBe(30_000);
    expect(effectiveCadenceMs({})).toBeUndefined();
  });

  it('takes serverRefresh only as a boolean', () => {
    expect(ok(surfaceRegionSchema, { key: 'rib:d', serverRefresh: false })).toBe(true);
    expect(messages(surfaceRegionSchema, { key: 'rib:d', serverRefresh: 'no' })).toMatch(/serverRefresh is a boolean/);
  });

  it('takes workflowArgs only with string values', () => {
    expect(ok(surfaceRegionSchema, { key: 'rib:d', workflow: 'w', workflowArgs: { id: '7' } })).toBe(true);
    expect(messages(surfaceRegionSchema, { key: 'rib:d', workflow: 'w', workflowArgs: { id: 7 } })).toMatch(/workflowArgs values are strings/);
  });

  it('rejects unknown region fields', () => {
    expect(ok(surfaceRegionSchema, { key: 'rib:d', colour: 'red' })).toBe(false);
  });

  it('carries 1 to 8 head actions', () => {
    const action = { label: 'Refresh', action: 'refresh' };
    expect(ok(surfaceRegionSchema, { key: 'rib:d', headActions: [action] })).toBe(true);
    expect(ok(surfaceRegionSchema, { key: 'rib:d', headActions: Array(8).fill(action) })).toBe(true);
    expect(messages(surfaceRegionSchema, { key: 'rib:d', headActions: [] })).toMatch(/1 to 8/);
    expect(messages(surfaceRegionSchema, { key: 'rib:d', headActions: Array(9).fill(action) })).toMatch(/1 to 8/);
  });

  it.each([
    ['fields', [{ name: 'x' }], /no form/],
    ['expanded', true, /no pressed state/],
    ['inline', true, /no pressed state/],
    ['selected', false, /no pressed state/],
  ])('rejects a head action carrying the board-card affordance %s', (field, value, why) => {
    expect(messages(headActionSchema, { label: 'Go', action: 'go', [field]: value })).toMatch(why);
  });

  it('requires a head action to name a verb or a workflow, with string workflowArgs', () => {
    expect(ok(headActionSchema, { label: 'Go' })).toBe(false);
    expect(ok(headActionSchema, { label: 'Run', workflow: 'w', workflowArgs: { a: 'b' }, destructive: true, confirm: 'Sure?' })).toBe(true);
    expect(ok(headActionSchema, { label: 'Run', workflow: 'w', workflowArgs: { a: 1 } })).toBe(false);
  });

  it('keeps collapse and hide-when-empty flags off the banner', () => {
    for (const flag of ['collapsible', 'collapsed', 'hideWhenEmpty']) {
      expect(ok(surfaceRegionSchema, { key: 'rib:d', [flag]: true })).toBe(true);
      expect(ok(bannerRegionSchema, { key: 'rib:d', [flag]: true })).toBe(false);
    }
    expect(ok(bannerRegionSchema, { key: 'rib:d', live: true, cadenceMs: 60_000 })).toBe(true);
  });

  it('lays a surface out as header, banner, rows of columns (a region or a stack) and footer', () => {
    const surface = {
      id: 'demo',
      title: 'Demo',
      heading: 'Demo board',
      badgeKey: 'rib:demo:badge',
      layout: {
        header: { key: 'rib:demo:h', collapsible: true },
        banner: { key: 'rib:demo:b' },
        rows: [{ columns: [{ key: 'rib:demo:a' }, [{ key: 'rib:demo:s1' }, { key: 'rib:demo:s2' }]] }],
        footer: { key: 'rib:demo:f' },
      },
    };
    expect(ribSurfaceDescriptorSchema.parse(surface)).toEqual(surface);
    expect(ok(ribSurfaceDescriptorSchema, { ...surface, id: 'a:b' })).toBe(false);
  });
});

describe('client effects', () => {
  it.each([
    { effect: 'open-chat', seed: { systemPrompt: 'You help.', name: 'Helper' } },
    { effect: 'run-workflow', workflow: 'refresh', args: { id: '1' }, stay: true },
    { effect: 'open-canvas', key: 'rib:demo', placement: 'side' },
    { effect: 'open-surface', surfaceId: 'surface:demo:main', regionKey: 'rib:demo:x' },
    { effect: 'open-run', runId: 'r1', workflow: 'refresh' },
  ])('recognizes $effect', (effect) => expect(ok(ribClientEffectSchema, effect)).toBe(true));

  it.each([
    { effect: 'open-browser', url: 'https://example.com' },
    { effect: 'open-canvas', key: 'rib:demo', placement: 'left' },
    { effect: 'open-surface', surfaceId: 'main' },
    { effect: 'run-workflow', workflow: 'w', args: { n: 1 } },
    { effect: 'open-run', runId: 'r1' },
  ])('rejects the unknown or malformed effect %j', (effect) => expect(ok(ribClientEffectSchema, effect)).toBe(false));
});

describe('ingest payloads', () => {
  it('caps the text and rejects unknown fields', () => {
    expect(ok(ribIngestPayloadSchema, { text: 'hello', sourceConversationId: 'c1' })).toBe(true);
    expect(ok(ribIngestPayloadSchema, { text: 'x'.repeat(32_001) })).toBe(false);
    expect(ok(ribIngestPayloadSchema, { text: 'hi', role: 'system' })).toBe(false);
  });
});

describe('docs sources', () => {
  it('take exactly one of inline content or an http(s) llmsFullUrl', () => {
    expect(ok(ribDocsSourceSchema, { title: 'T', summary: 'S', content: '# A' })).toBe(true);
    expect(ok(ribDocsSourceSchema, { title: 'T', summary: 'S', llmsFullUrl: 'https://x.dev/llms-full.txt' })).toBe(true);
    expect(ok(ribDocsSourceSchema, { title: 'T', summary: 'S' })).toBe(false);
    expect(ok(ribDocsSourceSchema, { title: 'T', summary: 'S', content: '# A', llmsFullUrl: 'https://x.dev' })).toBe(false);
    expect(ok(ribDocsSourceSchema, { title: 'T', summary: 'S', llmsFullUrl: 'file:///etc/passwd' })).toBe(false);
  });
});

describe('tools', () => {
  it('names a family by the text before the first underscore', () => {
    expect(toolFamily('demo_ping')).toBe('demo');
    expect(toolFamily('git_log_all')).toBe('git');
    expect(toolFamily('ping')).toBe('other');
  });

  it('lets a rib declare typed tools in registerTools', () => {
    const ping: ToolDefinition<{ message: string }> = {
      name: 'demo_ping',
      description: 'Echo',
      inputSchema: z.object({ message: z.string() }),
      execute(input, ctx) {
        ctx.emit({ type: 'tool_result', toolUseId: '', content: `pong: ${input.message}` });
      },
    };
    const rib: Rib = { id: 'demo', displayName: 'Demo', registerTools: () => [ping] };
    expect(rib.registerTools?.({ getExec: () => ({}) as never })).toHaveLength(1);
  });
});
