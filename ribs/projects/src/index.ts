import type { Rib } from '@keelson/shared';

const rib: Rib = { id: 'projects', displayName: 'Projects' };
export default rib;
