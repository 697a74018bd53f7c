import { serviceIdentity } from '@keelson/service';
import { GraphqlRunTurnSource, GraphqlTranscriptSource, startMemorySubgraph as startMemory, type RunningMemory, type StartMemoryOptions } from '@keelson/subgraph-memory';

export interface StartMemoryServiceOptions extends Omit<StartMemoryOptions, 'capture'> {
  /** Where capture reads transcript bodies: the sessions subgraph. */
  sessionsUrl: string;
  /** Where capture reads prompt-node turns: the runs subgraph. */
  runsUrl: string;
}

/**
 * The memory service (docker-compose `memory`, and `npm start`'s): the memory subgraph with capture
 * always on, transcripts from the sessions subgraph and prompt-node turns from the runs subgraph, each
 * read by URL as the memory service (a source that is down only delays capture; see PROTOCOL.md).
 */
export function startMemoryService(opts: StartMemoryServiceOptions): Promise<RunningMemory> {
  const { sessionsUrl, runsUrl, ...config } = opts;
  const identity = serviceIdentity(config.security.assertions, 'memory');
  return startMemory({
    ...config,
    capture: { source: new GraphqlTranscriptSource(sessionsUrl, identity, config.log), runs: new GraphqlRunTurnSource(runsUrl, identity, config.log) },
  });
}
