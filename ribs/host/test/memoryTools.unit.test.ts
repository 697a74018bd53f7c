import type { MemoryRecord, MemoryTools, RibContext } from '@keelson/ribs-contract';
import { rib, startHost } from './support/quietHost';

/** MemoryTools per owner, kept in a map: what the host hands out, recorded. */
function memoryByOwner(): { memory: (ribId: string) => MemoryTools; owners: Map<string, MemoryRecord[]> } {
  const owners = new Map<string, MemoryRecord[]>();
  return {
    owners,
    memory: (ribId) => ({
      async recall({ query }) {
        return (owners.get(ribId) ?? []).filter((r) => query.split(' ').some((word) => r.text.includes(word)));
      },
      async writeback({ text, kind }) {
        const list = owners.get(ribId) ?? [];
        const record: MemoryRecord = { id: `${ribId}-${list.length + 1}`, kind: kind ?? 'evidence', text, createdAt: new Date(0).toISOString() };
        owners.set(ribId, [...list, record]);
        return { id: record.id };
      },
    }),
  };
}

describe('the host memory (seed 000: getMemory is the MemoryTools the executor binds)', () => {
  it('registers memory_write and memory_recall over the host memory, the calling rib\'s own or the workflows\'', async () => {
    const { memory, owners } = memoryByOwner();
    const { host } = await startHost([rib('notes')], { memory });
    const write = await host.executeTool({ name: 'memory_write', input: { text: 'ship on green', kind: 'decision' }, surface: 'workflow' });
    expect(write).toMatchObject({ status: 'ok', content: 'remembered (workflows-1)' });
    const ribWrite = await host.executeTool({ name: 'memory_write', input: { text: 'notes are markdown' }, surface: 'workflow', callerRibId: 'notes' });
    expect(ribWrite).toMatchObject({ status: 'ok', content: 'remembered (notes-1)' });
    expect([...owners.keys()]).toEqual(['workflows', 'notes']);
    await expect(host.executeTool({ name: 'memory_recall', input: { query: 'ship' }, surface: 'workflow' })).resolves.toMatchObject({ content: '- [decision] ship on green' });
    await expect(host.executeTool({ name: 'memory_recall', input: { query: 'nothing' }, surface: 'workflow' })).resolves.toMatchObject({ content: 'Nothing remembered matches.' });
    // Input is the MemoryTools' own: an empty text never reaches it.
    await expect(host.executeTool({ name: 'memory_write', input: { text: '  ' }, surface: 'workflow' })).resolves.toMatchObject({ status: 'invalid-input' });
  });

  it('gives every rib getMemory from the host memory, unless its seams bring their own', async () => {
    const { memory, owners } = memoryByOwner();
    const contexts = new Map<string, RibContext>();
    const capture = (id: string) => rib(id, { registerTools: (ctx) => (contexts.set(id, ctx), []) });
    const own: MemoryTools = { recall: async () => [], writeback: async () => ({ id: 'own' }) };
    await startHost([capture('alpha'), capture('beta')], { memory, seams: (id) => (id === 'beta' ? { getMemory: () => own } : {}) });
    await expect(contexts.get('alpha')!.getMemory!().writeback({ text: 'from alpha' })).resolves.toEqual({ id: 'alpha-1' });
    await expect(contexts.get('beta')!.getMemory!().writeback({ text: 'from beta' })).resolves.toEqual({ id: 'own' });
    expect([...owners.keys()]).toEqual(['alpha']);
  });

  it('has no memory tools and no getMemory without a host memory', async () => {
    const contexts = new Map<string, RibContext>();
    const { host } = await startHost([rib('alpha', { registerTools: (ctx) => (contexts.set('alpha', ctx), []) })]);
    await expect(host.executeTool({ name: 'memory_recall', input: { query: 'x' }, surface: 'workflow' })).resolves.toMatchObject({ status: 'unknown-tool' });
    expect(contexts.get('alpha')!.getMemory).toBeUndefined();
  });
});
