import { workflowTypes } from '@keelson/schema';
import * as workflows from '.';

describe('workflow registry', () => {
  it('exports a workflow function for every name in workflowTypes', () => {
    for (const name of Object.values(workflowTypes)) {
      expect(typeof (workflows as Record<string, unknown>)[name]).toBe('function');
    }
  });
});
