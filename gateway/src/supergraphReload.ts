import { watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { Logger } from '@keelson/service';
import type { RunningGateway } from './startGateway';

/**
 * Reloads the gateway's supergraph from `file` when the file changes (its folder is watched, so an
 * editor's or deploy's rename-over counts) and on SIGHUP. Open subscriptions stay open; a file that
 * does not build is refused and logged, the graph in force stays. Returns the stop function.
 */
export function reloadSupergraphOnChange(file: string, gateway: Pick<RunningGateway, 'reload'>, log: Logger, opts: { debounceMs?: number } = {}): () => void {
  let loaded: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let queue: Promise<void> = Promise.resolve();
  const reload = (why: 'file changed' | 'SIGHUP') => {
    queue = queue.then(async () => {
      try {
        const sdl = await readFile(file, 'utf8');
        if (why === 'file changed' && sdl === loaded) return;
        await gateway.reload(sdl);
        loaded = sdl;
        log.info({ file, why }, 'supergraph reloaded; open subscriptions kept');
      } catch (err) {
        log.error({ err, file, why }, 'supergraph reload refused; the graph in force stays');
      }
    });
  };
  void readFile(file, 'utf8').then((sdl) => {
    loaded ??= sdl;
  }, () => undefined);
  const watcher = watch(dirname(file), (_event, name) => {
    if (name !== null && name.toString() !== basename(file)) return;
    clearTimeout(timer);
    timer = setTimeout(() => reload('file changed'), opts.debounceMs ?? 200);
  });
  watcher.on('error', (err) => log.warn({ err, file }, 'watching the supergraph failed; SIGHUP still reloads it'));
  const onHangup = () => reload('SIGHUP');
  process.on('SIGHUP', onHangup);
  return () => {
    clearTimeout(timer);
    watcher.close();
    process.off('SIGHUP', onHangup);
  };
}
