import 'reflect-metadata';
import { runService, serviceIdentity } from '@keelson/service';
import { GraphqlRunTurnSource } from './capture/runTurnSource';
import { GraphqlTranscriptSource } from './capture/graphqlTranscriptSource';
import { loadMemoryConfig } from './config';
import { start } from './index';

// Capture always runs in the service: transcripts from the sessions subgraph, prompt-node turns from
// the runs subgraph, each read by URL (a source that is down only delays capture; see PROTOCOL.md).
runService('memory', loadMemoryConfig, (config) => {
  const identity = serviceIdentity(config.security.assertions, 'memory');
  return start({
    ...config,
    capture: { source: new GraphqlTranscriptSource(config.sessionsUrl, identity, config.log), runs: new GraphqlRunTurnSource(config.runsUrl, identity, config.log) },
  });
});
