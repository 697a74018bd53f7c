import { parseEnv } from '@keelson/schema';
import { subgraphUrlsFromEnv } from './config';

describe('subgraphUrlsFromEnv', () => {
  it('points each known subgraph at its default port on loopback', () => {
    expect(subgraphUrlsFromEnv(parseEnv({}), ['projects', 'runs'])).toEqual({
      projects: 'http://127.0.0.1:4001/graphql',
      runs: 'http://127.0.0.1:4003/graphql',
    });
  });

  it('follows a changed port, and an explicit URL over the port', () => {
    const raw = { KEELSON_RUNS_PORT: '5003', KEELSON_PROJECTS_URL: 'http://projects:4001/graphql', KEELSON_SESSIONS_URL: 'http://sessions:4004/graphql' };

    expect(subgraphUrlsFromEnv(parseEnv(raw), ['projects', 'runs', 'sessions'], raw)).toEqual({
      projects: 'http://projects:4001/graphql',
      runs: 'http://127.0.0.1:5003/graphql',
      sessions: 'http://sessions:4004/graphql',
    });
  });

  it('reaches subgraphs bound to every interface over loopback, and a specific address directly', () => {
    expect(subgraphUrlsFromEnv(parseEnv({ KEELSON_HOST: '0.0.0.0', KEELSON_INSECURE_BIND: '1' }), ['ribs'])).toEqual({ ribs: 'http://127.0.0.1:4002/graphql' });
    expect(subgraphUrlsFromEnv(parseEnv({ KEELSON_HOST: '10.0.0.7', KEELSON_INSECURE_BIND: '1' }), ['ribs'])).toEqual({ ribs: 'http://10.0.0.7:4002/graphql' });
  });

  it('leaves subgraphs the environment does not know to the supergraph\'s URL', () => {
    expect(subgraphUrlsFromEnv(parseEnv({}), ['catalog'])).toEqual({});
  });
});
