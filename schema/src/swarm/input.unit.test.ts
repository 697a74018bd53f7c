import { describeZodError } from '../zodMessage';
import { resolveSwarmLimits, startSwarmInputSchema } from './input';

const problems = (input: unknown) => {
  const r = startSwarmInputSchema.safeParse(input);
  return r.success ? '' : describeZodError(r.error);
};

describe('startSwarmInputSchema: evidence is supplied, never fetched', () => {
  it('keeps evidence verbatim', () => {
    const body = '  diff --git a/x b/x\n+\ttabs and trailing space \n';
    const parsed = startSwarmInputSchema.parse({ task: 'review', evidence: [{ title: 'PR #1', sourceUrl: 'https://forge.example/pr/1', body }] });
    expect(parsed.evidence[0]!.body).toBe(body);
  });

  it('holds titles to one line and source URLs to http/https', () => {
    expect(problems({ task: 't', evidence: [{ title: 'a\nb', body: 'x' }] })).toContain('input.evidence.0.title: a title is one line: remove its line breaks');
    expect(problems({ task: 't', evidence: [{ title: 'a', sourceUrl: 'javascript:alert(1)', body: 'x' }] })).toContain('input.evidence.0.sourceUrl: a source URL must be an http or https URL');
    expect(problems({ task: 't', evidence: [{ title: 'a', sourceUrl: 'file:///etc/passwd', body: 'x' }] })).toContain('http or https');
  });

  it('says how long the task is and how much to cut', () => {
    expect(problems({ task: 'x'.repeat(8100) })).toBe('input.task: the task is 8,100 characters; at most 8,000 are allowed: cut 100');
  });

  it('bounds the evidence to 20 items and 300,000 characters together', () => {
    expect(problems({ task: 't', evidence: Array.from({ length: 21 }, () => ({ title: 'a', body: 'b' })) })).toContain('at most 20 evidence items');
    const big = Array.from({ length: 3 }, (_, i) => ({ title: `t${i}`, body: 'b'.repeat(100_000) }));
    expect(problems({ task: 't', evidence: big })).toBe('input.evidence: the evidence (titles and bodies together) is 300,006 characters; at most 300,000 are allowed: cut 6');
  });

  it('bounds every limit and names the range', () => {
    expect(problems({ task: 't', limits: { maxAgents: 13 } })).toBe('input.limits.maxAgents: maxAgents must be between 1 and 12');
    expect(problems({ task: 't', limits: { turnTimeoutS: 10 } })).toBe('input.limits.turnTimeoutS: turnTimeoutS must be between 30 and 1800');
    expect(problems({ task: 't', limits: { maxAgents: 2 }, agents: [{ name: 'a', role: 'r' }, { name: 'b', role: 'r' }] })).toContain('maxAgents is 2, but the lead and 2 named agent(s) need 3');
  });

  it('resolves limits: defaults, then the size preset, then explicit values', () => {
    expect(resolveSwarmLimits({})).toEqual({ maxAgents: 4, maxTurns: 40, maxTurnsPerAgent: 12, turnTimeoutS: 600, maxMinutes: 30 });
    expect(resolveSwarmLimits({ size: 'SMALL', limits: { maxTurns: 5 } })).toMatchObject({ maxAgents: 3, maxTurns: 5 });
  });
});
