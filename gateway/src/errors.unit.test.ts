import { silentLogger } from '@keelson/service';
import { GraphQLError } from 'graphql';
import { createGatewayErrorFormatter, gatewayError } from './errors';

describe('the gateway error formatter', () => {
  const log = silentLogger();
  const format = createGatewayErrorFormatter(log);

  it('keeps a registry code with its details and status, dropping what names the mesh\'s insides', () => {
    const formatted = {
      message: 'no project p1',
      path: ['project'],
      extensions: { code: 'NOT_FOUND', status: 404, id: 'p1', serviceName: 'projects', stacktrace: ['at …'], response: { url: 'http://10.0.0.3' } },
    };

    expect(format(formatted, new GraphQLError('no project p1'))).toEqual({
      message: 'no project p1',
      path: ['project'],
      extensions: { code: 'NOT_FOUND', status: 404, id: 'p1' },
    });
  });

  it('gives request errors status 400', () => {
    expect(format({ message: 'Syntax Error', extensions: { code: 'GRAPHQL_PARSE_FAILED' } }, undefined)).toEqual({
      message: 'Syntax Error',
      extensions: { code: 'GRAPHQL_PARSE_FAILED', status: 400 },
    });
  });

  it('masks anything else and logs it for operators', () => {
    const error = jest.spyOn(log, 'error');
    const original = new Error('ECONNRESET 10.0.0.3:5432');

    const formatted = format(
      { message: original.message, path: ['a'], extensions: { code: 'DOWNSTREAM_SERVICE_ERROR', serviceName: 'runs' } },
      new GraphQLError(original.message, { originalError: original }),
    );

    expect(formatted).toEqual({ message: 'Internal server error', path: ['a'], extensions: { code: 'INTERNAL_SERVER_ERROR', status: 500 } });
    expect(error).toHaveBeenCalledWith(expect.objectContaining({ err: original, serviceName: 'runs' }), 'internal error (masked for the client)');
  });

  it('says SERVICE_UNAVAILABLE (a retryable 503) for a database that is not answering, logged as a warning', () => {
    const warn = jest.spyOn(log, 'warn');
    const error = jest.spyOn(log, 'error');
    const original = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });

    const formatted = format({ message: original.message, path: ['viewer'], extensions: {} }, new GraphQLError(original.message, { originalError: original }));

    expect(formatted).toEqual({ message: expect.stringMatching(/^Service unavailable: .*retry shortly/), path: ['viewer'], extensions: { code: 'SERVICE_UNAVAILABLE', status: 503 } });
    expect(formatted.message).not.toContain('administrator');
    expect(warn).toHaveBeenCalledWith(expect.objectContaining({ err: original }), expect.stringContaining('unavailable'));
    expect(error).not.toHaveBeenCalledWith(expect.objectContaining({ err: original }), expect.anything());
  });

  it('builds errors that carry code and status', () => {
    expect(gatewayError('SERVICE_UNAVAILABLE', 'down', { subgraph: 'runs' }).extensions).toEqual({ subgraph: 'runs', code: 'SERVICE_UNAVAILABLE', status: 503 });
    expect(gatewayError('BAD_REQUEST', 'no').extensions).toEqual({ code: 'BAD_REQUEST', status: 400 });
  });
});
