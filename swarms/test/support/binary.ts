export { freePort } from '@keelson/service';
export { clickclackBinary, STANDIN_BIN } from '@keelson/clickclack-standin';
