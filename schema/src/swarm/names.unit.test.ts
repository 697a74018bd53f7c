import { isTerminalSwarmStatus, swarmStatuses } from './names';

describe('isTerminalSwarmStatus', () => {
  it('holds for every contract status but RUNNING, and for nothing outside the contract', () => {
    expect(swarmStatuses.filter((s) => isTerminalSwarmStatus(s))).toEqual(['DONE', 'STALLED', 'EXHAUSTED', 'STOPPED', 'ERROR']);
    expect(isTerminalSwarmStatus('RUNNING')).toBe(false);
    for (const other of ['', 'done', 'PAUSED', 'CANCELLED']) expect(isTerminalSwarmStatus(other)).toBe(false);
  });
});
