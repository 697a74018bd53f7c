import type { Rib } from '@keelson/shared';

const rib: Rib = { id: 'notes', displayName: 'Notes' };
export default rib;
