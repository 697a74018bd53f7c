import { codeForStatus, errorCodes, isMeshError, isUnavailableError, MeshError, statusOf } from './errors';

describe('the error-code registry', () => {
  it('gives every code of DESIGN.md its HTTP status', () => {
    expect(Object.fromEntries(Object.entries(errorCodes).map(([k, v]) => [k, v.status]))).toEqual({
      BAD_USER_INPUT: 400,
      UNAUTHENTICATED: 401,
      FORBIDDEN: 403,
      NOT_FOUND: 404,
      CONFLICT: 409,
      CAPABILITY_UNSUPPORTED: 501,
      TURN_IN_FLIGHT: 409,
      INTERNAL: 500,
      UPSTREAM_FAILED: 502,
      SERVICE_UNAVAILABLE: 503,
    });
  });

  it('maps the seed statuses back to codes', () => {
    expect([400, 409, 500, 502, 503].map(codeForStatus)).toEqual([
      'BAD_USER_INPUT',
      'CONFLICT',
      'INTERNAL',
      'UPSTREAM_FAILED',
      'SERVICE_UNAVAILABLE',
    ]);
  });

  it('carries code, status and details on MeshError, recognisable after serialisation', () => {
    const err = new MeshError('CONFLICT', 'held', { holder: 'h' });
    expect([err.code, err.status, err.details]).toEqual(['CONFLICT', statusOf('CONFLICT'), { holder: 'h' }]);
    expect(isMeshError(err)).toBe(true);
    expect(isMeshError({ name: 'MeshError', code: 'CONFLICT' })).toBe(true);
    expect(isMeshError({ name: 'MeshError', code: 'NOPE' })).toBe(false);
    expect(isMeshError(new Error('x'))).toBe(false);
  });

  it('recognises a database or service that is unavailable for now, and nothing else', () => {
    const sqlState = (code: string) => Object.assign(new Error('from postgres'), { code });
    // Connection exceptions, insufficient resources, shutdown/startup, a statement timeout.
    for (const code of ['08000', '08006', '08P01', '53300', '53200', '57P01', '57P02', '57P03', '57P05', '57014']) expect([code, isUnavailableError(sqlState(code))]).toEqual([code, true]);
    // A wrong request, a constraint, a lock wait that ran out, a plain bug: not for retrying blindly.
    for (const code of ['23505', '22P02', '42P01', '55P03', '40001', '57P06', '08', '0800A1', 'ECONNRESET']) expect([code, isUnavailableError(sqlState(code))]).toEqual([code, false]);
    // node-postgres' pool and client, word for word.
    for (const message of ['timeout exceeded when trying to connect', 'Connection terminated unexpectedly', 'Connection terminated due to connection timeout', 'Connection terminated', 'Query read timeout', 'Client has encountered a connection error and is not queryable', 'Client was closed and is not queryable']) expect(isUnavailableError(new Error(message))).toBe(true);
    for (const message of ['Connection terminated by a test', 'a timeout exceeded when trying to connect', 'Internal server error']) expect(isUnavailableError(new Error(message))).toBe(false);
    // TypeORM's runner released under a transaction by its connection's error (a statement through the runner, or its EntityManager).
    expect(isUnavailableError(Object.assign(new Error('Query runner already released. Cannot run queries anymore.'), { name: 'QueryRunnerAlreadyReleasedError' }))).toBe(true);
    expect(isUnavailableError(Object.assign(new Error('Database connection provided by a query runner was already released, cannot continue to use its querying methods anymore.'), { name: 'QueryRunnerProviderAlreadyReleasedError' }))).toBe(true);
    expect(isUnavailableError(new Error('Query runner already released. Cannot run queries anymore.'))).toBe(false);
    // A refused connect, and only a connect.
    expect(isUnavailableError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', syscall: 'connect' }))).toBe(true);
    expect(isUnavailableError(Object.assign(new Error('x'), { code: 'ECONNREFUSED', syscall: 'write' }))).toBe(false);
    // A connection dropped by its peer under a read or a write, and only there.
    expect(isUnavailableError(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' }))).toBe(true);
    expect(isUnavailableError(Object.assign(new Error('write EPIPE'), { code: 'EPIPE', syscall: 'write' }))).toBe(true);
    expect(isUnavailableError(Object.assign(new Error('x'), { code: 'ECONNRESET', syscall: 'connect' }))).toBe(false);
    expect(isUnavailableError(Object.assign(new Error('x'), { code: 'EPIPE', syscall: 'read' }))).toBe(false);
    // Wrapped by TypeORM (driverError) or by a cause chain, however deep (and a cycle ends).
    expect(isUnavailableError(Object.assign(new Error('QueryFailedError'), { driverError: sqlState('57P01') }))).toBe(true);
    expect(isUnavailableError(new Error('outer', { cause: new Error('middle', { cause: new Error('Connection terminated unexpectedly') }) }))).toBe(true);
    const cycle: { cause?: unknown; message: string } = { message: 'loop' };
    cycle.cause = cycle;
    expect(isUnavailableError(cycle)).toBe(false);
    expect([undefined, null, 'Connection terminated', 42].map(isUnavailableError)).toEqual([false, false, false, false]);
  });
});
