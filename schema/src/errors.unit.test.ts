import { codeForStatus, errorCodes, isMeshError, MeshError, statusOf } from './errors';

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
});
