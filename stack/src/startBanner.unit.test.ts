import { graphiqlLines } from './startBanner';

describe("npm start's GraphiQL lines", () => {
  const token = { token: 'kmt_secret123', path: '/home/you/.keelson/token' };

  it('carry the token in the URL fragment only on an interactive terminal', () => {
    expect(graphiqlLines('http://127.0.0.1:4000/', token, true)[0]).toBe('GraphiQL:                   http://127.0.0.1:4000/#token=kmt_secret123');
  });

  it('never print the token when the output is not a terminal (a pipe, a log file): the token file is named instead', () => {
    const lines = graphiqlLines('http://127.0.0.1:4000/', token, false);
    expect(lines.join('\n')).not.toContain('kmt_secret123');
    expect(lines.join('\n')).toContain('/home/you/.keelson/token');
    expect(lines[0]).toMatch(/^GraphiQL: +http:\/\/127\.0\.0\.1:4000\/ \(open it with #token=/);
  });

  it('say authentication is off when there is no token', () => {
    expect(graphiqlLines('http://127.0.0.1:4000/', null, false)).toEqual([
      'GraphiQL:                   http://127.0.0.1:4000/',
      'Authentication:             OFF (KEELSON_AUTH=off): every process on this machine controls the mesh',
    ]);
  });
});
