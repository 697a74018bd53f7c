// @keelson/platform: what every domain stands on. Each module is re-exported by name below.
export { listProcesses, findOwnedProcesses, isAlive, endProcessGroup } from './process/ownedProcesses';
export type { ProcessInfo } from './process/ownedProcesses';
