import { workflowUiUrl } from './client';

describe('workflowUiUrl', () => {
  it('links a workflow id to its latest run page', () => {
    expect(workflowUiUrl('http://127.0.0.1:8233', 'default', 'echo-1')).toBe('http://127.0.0.1:8233/namespaces/default/workflows/echo-1');
  });

  it('links a given run to its history, escaping ids and tolerating a trailing slash on the base', () => {
    expect(workflowUiUrl('http://ui.local/', 'team a', 'run/7 ?', 'r-1')).toBe(
      'http://ui.local/namespaces/team%20a/workflows/run%2F7%20%3F/r-1/history',
    );
  });
});
