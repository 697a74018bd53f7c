import type { Rib } from '@keelson/shared';

export { ClickClackClient, ClickClackError } from './bus/clickclack';
export type { ClickClackClientOptions, MintedToken, MessagePage, BusSubscription } from './bus/clickclack';
export type { BusEvent, BusMessage, BusUser } from './bus/wire';
export { resolveBusSetup, whichClickclack, DEFAULT_CLICKCLACK_PORT, NO_BINARY_REASON } from './bus/busSetup';
export type { BusSetup } from './bus/busSetup';
export { ManagedBus, childEnv } from './bus/managedBus';
export type { ManagedBusOptions, ManagedBusStatus, BusProcessRecord } from './bus/managedBus';
export { ownsProcess, processAlive } from './bus/processes';
export { startStandin, STANDIN_VERSION } from './standin/server';
export type { RunningStandin, StandinServerOptions } from './standin/server';

export const RIB_ID = 'swarm';

const rib: Rib = {
  id: RIB_ID,
  displayName: 'Swarm',
};

export default rib;
