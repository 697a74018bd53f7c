import 'reflect-metadata';
import { runService, serviceIdentity } from '@keelson/service';
import { GraphqlRunTurnSource, GraphqlTranscriptSource, loadMemoryConfig, start } from '@keelson/subgraph-memory';

// Capture always runs in the service: transcripts from the sessions subgraph, prompt-node turns from
// the runs subgraph, each read by URL (a source that is down only delays capture; see PROTOCOL.md).
runService('memory', loadMemoryConfig, (config) => {
  const identity = serviceIdentity(config.security.assertions, 'memory');
  return start({
    ...config,
    capture: { source: new GraphqlTranscriptSource(config.sessionsUrl, identity, config.log), runs: new GraphqlRunTurnSource(config.runsUrl, identity, config.log) },
  });
});
