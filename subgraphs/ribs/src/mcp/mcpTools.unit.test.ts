import type { RegisteredToolInfo } from '@keelson/ribs-contract';
import { mayCall, toolScope } from './mcpTools';

const tool = (name: string, family: string, stateChanging: boolean): RegisteredToolInfo => ({ name, description: '', family, state_changing: stateChanging, requires_confirmation: false });
const caller = (scopes: ('read' | 'write' | 'operate' | 'admin')[]) => ({ subject: 'token:t', kind: 'token' as const, scopes });

describe('the scope a tool needs over MCP', () => {
  it('is write for rib tools and reading run tools, operate for the run tools that change a run', () => {
    expect(toolScope(tool('notes_add', 'notes', true))).toBe('write');
    expect(toolScope(tool('notes_search', 'notes', false))).toBe('write');
    expect(toolScope(tool('run_status', 'run', false))).toBe('write');
    expect(toolScope(tool('run_cancel', 'run', true))).toBe('operate');
  });

  it('is held by the effective scopes: admin implies all, write not operate', () => {
    const cancel = tool('run_cancel', 'run', true);
    const add = tool('notes_add', 'notes', true);
    expect([mayCall(caller(['admin']), cancel), mayCall(caller(['write']), cancel), mayCall(caller(['operate']), cancel)]).toEqual([true, false, true]);
    expect([mayCall(caller(['write']), add), mayCall(caller(['read']), add), mayCall(caller(['operate']), add)]).toEqual([true, false, false]);
  });
});
