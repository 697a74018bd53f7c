import { MockActivityEnvironment } from '@temporalio/testing';
import { ProviderError, ProviderRegistry, type ModelCallRequest, type ModelProvider } from '@keelson/providers';
import { createMemoryActivities } from './memoryActivities';
import type { MemoryApi, RangeContent, CompactionRange } from './memoryApi';
import { SUMMARY_INSTRUCTION, summaryPrompt } from './summaryPrompt';

const range: CompactionRange = { conversationId: 'c-1', fromSeq: 51, toSeq: 53 };

function content(over: Partial<RangeContent> = {}): RangeContent {
  return {
    conversationId: 'c-1',
    sessionKey: 'claude-code:abc',
    agent: 'claude-code',
    channel: 'claude-code',
    messages: [51, 52, 53].map((seq) => ({ seq, role: seq % 2 ? 'user' : 'assistant', content: `message ${seq}`, createdAt: '2025-07-01T10:00:00Z' })),
    existingSummaryId: null,
    ...over,
  };
}

/** A memory subgraph stand-in that records what was saved. */
function api(answer: RangeContent | null): MemoryApi & { saved: unknown[] } {
  const saved: unknown[] = [];
  return {
    saved,
    candidates: async () => [range],
    range: async () => answer,
    saveSummary: async (input) => {
      saved.push(input);
      return { id: '7', fromSeq: input.fromSeq, toSeq: input.toSeq, model: input.model };
    },
  };
}

/** A provider that answers `text`, or fails with `error`, and records its requests. */
function provider(behaviour: { text?: string; error?: Error }): ModelProvider & { requests: ModelCallRequest[] } {
  const requests: ModelCallRequest[] = [];
  return {
    requests,
    id: 'anthropic',
    displayName: 'test',
    defaultModel: 'default-model',
    modelClasses: { fast: 'fast-model' },
    capabilities: { streaming: true, tools: true, sessionResume: false, reasoningEffort: false },
    async *call(req) {
      requests.push(req);
      if (behaviour.error) throw behaviour.error;
      yield { type: 'end', stopReason: 'end', text: behaviour.text ?? '', toolCalls: [], reasoning: [], usage: { inputTokens: 1, outputTokens: 1 }, model: 'fast-model-2025' };
    },
  };
}

const run = (memory: MemoryApi, providers: ModelProvider[]) => {
  const { memorySummarizeRange } = createMemoryActivities({ api: memory, registry: () => new ProviderRegistry(providers) });
  return new MockActivityEnvironment().run(memorySummarizeRange, range);
};

describe('summary prompts', () => {
  it('name the range, session and agent, and cut long messages and long excerpts with a marker', () => {
    const { system, user } = summaryPrompt(content({ messages: [{ seq: 51, role: 'user', content: 'x'.repeat(30), createdAt: '' }] }), range, { perMessageChars: 10 });
    expect(system).toMatch(/long-term memory/);
    expect(user.startsWith(`${SUMMARY_INSTRUCTION} (messages 51–53 of session claude-code:abc, agent claude-code, channel claude-code)`)).toBe(true);
    expect(user).toContain(`[51] user: ${'x'.repeat(10)} … [20 more characters]`);
    const long = summaryPrompt(content({ messages: Array.from({ length: 100 }, (_, i) => ({ seq: i + 1, role: 'user', content: 'y'.repeat(100), createdAt: '' })) }), range, { maxChars: 1000 });
    expect(long.user).toMatch(/characters of the excerpt left out/);
    expect(long.user).toContain('[1] user:');
    expect(long.user).toContain('[100] user:');
    expect(long.user.length).toBeLessThan(1300);
  });
});

describe('memorySummarizeRange', () => {
  it('writes the summary through the default provider with its fast model, and stores it for the range', async () => {
    const memory = api(content());
    const p = provider({ text: '  Fixed the parser in src/parse.ts.  ' });
    await expect(run(memory, [p])).resolves.toEqual({ summaryId: '7', outcome: 'written', model: 'fast-model-2025' });
    expect(p.requests).toHaveLength(1);
    expect(p.requests[0]).toMatchObject({ model: 'fast-model', tools: [], maxTokens: 1024 });
    expect(memory.saved).toEqual([{ ...range, content: 'Fixed the parser in src/parse.ts.', model: 'fast-model-2025' }]);
  });

  it('costs no model call for a range already summarised, and nothing for a conversation that is gone', async () => {
    const p = provider({ text: 'unused' });
    await expect(run(api(content({ existingSummaryId: '3' })), [p])).resolves.toEqual({ summaryId: '3', outcome: 'existing' });
    await expect(run(api(null), [p])).resolves.toEqual({ summaryId: null, outcome: 'gone' });
    expect(p.requests).toHaveLength(0);
  });

  it('fails for good without a provider or when the provider refuses the request, and retryably when it is overloaded or silent', async () => {
    await expect(run(api(content()), [])).rejects.toMatchObject({ type: 'CAPABILITY_UNSUPPORTED', nonRetryable: true });
    await expect(run(api(content()), [provider({ error: new ProviderError('bad request', 400) })])).rejects.toMatchObject({ type: 'UPSTREAM_FAILED', nonRetryable: true });
    await expect(run(api(content()), [provider({ error: new ProviderError('overloaded', 529) })])).rejects.toMatchObject({ type: 'UPSTREAM_FAILED', nonRetryable: false });
    await expect(run(api(content()), [provider({ text: '   ' })])).rejects.toMatchObject({ type: 'UPSTREAM_FAILED', nonRetryable: false });
  });

  it('refuses a range whose messages are not all there', async () => {
    const memory = api(content({ messages: content().messages.slice(1) }));
    await expect(run(memory, [provider({ text: 'x' })])).rejects.toMatchObject({ type: 'CONFLICT', nonRetryable: true });
    expect(memory.saved).toEqual([]);
  });
});
