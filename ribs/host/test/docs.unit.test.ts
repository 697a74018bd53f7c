import type { RibDocsSource } from '@keelson/ribs-contract';
import { splitH1Topics } from '../src/docs/docsCatalog';
import { rib, startHost } from './support/quietHost';

const guide = ['Intro before any heading.', '', '# Setup', 'Install it.', '```sh', '# not a topic', '```', '', '# Usage', 'Run it.'].join('\n');

async function docs(call: Record<string, string>, sources: RibDocsSource[], fetchText?: (url: string) => Promise<string>) {
  const { host, warnings } = await startHost([rib('demo', { contributeDocs: () => sources })], fetchText ? { fetchText } : {});
  return { outcome: await host.executeTool({ name: 'keelson_docs', input: call, surface: 'chat' }), host, warnings };
}

describe('H1 topics', () => {
  it('split on H1 headings outside code fences, keeping a preamble', () => {
    expect(splitH1Topics(guide).map((t) => t.title)).toEqual(['(preamble)', 'Setup', 'Usage']);
    expect(splitH1Topics(guide)[1]!.text).toContain('# not a topic');
  });
});

describe('the keelson_docs tool', () => {
  const source = { title: 'Demo Guide', summary: 'How the demo rib works', content: guide };

  it('lists every source, namespaced under its rib', async () => {
    const { outcome } = await docs({}, [source]);
    expect(outcome.content).toBe('Docs sources:\n- demo/demo-guide: Demo Guide — How the demo rib works');
  });

  it('indexes one source into its H1 topics', async () => {
    const { outcome } = await docs({ source: 'demo/demo-guide' }, [source]);
    expect(outcome.content).toBe('Demo Guide (demo/demo-guide) topics:\n1. (preamble)\n2. Setup\n3. Usage');
  });

  it('returns one topic by title or number, never the whole corpus', async () => {
    expect((await docs({ source: 'demo/demo-guide', topic: 'usage' }, [source])).outcome.content).toBe('# Usage\nRun it.');
    const byNumber = (await docs({ source: 'demo/demo-guide', topic: '2' }, [source])).outcome.content;
    expect(byNumber).toMatch(/^# Setup/);
    expect(byNumber).not.toContain('Run it.');
  });

  it('answers an unknown source or topic as an error naming the choices', async () => {
    await expect(docs({ source: 'nope' }, [source]).then((d) => d.outcome)).resolves.toMatchObject({ isError: true, content: expect.stringMatching(/demo\/demo-guide/) });
    await expect(docs({ source: 'demo/demo-guide', topic: 'Deploy' }, [source]).then((d) => d.outcome)).resolves.toMatchObject({
      isError: true,
      content: expect.stringMatching(/topics: \(preamble\), Setup, Usage/),
    });
  });

  it('fetches an llms-full.txt corpus once and caches it', async () => {
    const fetchText = jest.fn(async () => '# Remote\nFrom the web.');
    const { host } = await docs({}, [{ title: 'Remote', summary: 'Fetched', llmsFullUrl: 'https://docs.example.com/llms-full.txt' }], fetchText);
    for (let i = 0; i < 2; i++) {
      await expect(host.executeTool({ name: 'keelson_docs', input: { source: 'demo/remote', topic: 'Remote' }, surface: 'chat' })).resolves.toMatchObject({ content: '# Remote\nFrom the web.' });
    }
    expect(fetchText).toHaveBeenCalledTimes(1);
  });

  it('drops a malformed docs source at activation with a warning', async () => {
    const { outcome, warnings } = await docs({}, [source, { title: 'Both', summary: 's', content: 'x', llmsFullUrl: 'https://x.dev' }]);
    expect(outcome.content).not.toContain('Both');
    expect(warnings).toContainEqual(expect.objectContaining({ rule: 'docs-source', message: expect.stringMatching(/exactly one/) }));
  });
});
