import { effectiveScopes, MeshError, scopes as meshScopes, type Caller, type Scope } from '@keelson/schema';
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';

export interface JwtSettings {
  /** The identity provider's JWKS (public keys, fetched and cached by jose). */
  jwksUrl: string;
  issuer: string;
  audience: string;
  /** The claim holding scopes: a space-separated string or an array. @default scope */
  scopeClaim?: string;
  /** The longest lifetime accepted (`exp` minus `iat`, or minus now without `iat`). @default 86400 (a day) */
  maxLifetimeSeconds?: number;
}

/** A day: longer-lived bearer JWTs are refused unless KEELSON_JWT_MAX_LIFETIME_S allows them. */
export const DEFAULT_JWT_MAX_LIFETIME_S = 86_400;

/** The mesh scopes a claim grants; anything else it names is ignored. */
function scopesOf(claim: unknown): Scope[] {
  const names = typeof claim === 'string' ? claim.split(/\s+/) : Array.isArray(claim) ? claim.filter((s): s is string => typeof s === 'string') : [];
  return names.filter((s): s is Scope => (meshScopes as readonly string[]).includes(s));
}

/**
 * Verifies bearer JWTs of an identity provider against its JWKS, issuer and audience (jose), and
 * maps them to a caller: subject = `sub`, scopes from the configured claim.
 */
export class JwtVerifier {
  private readonly keys: JWTVerifyGetKey;

  constructor(private readonly settings: JwtSettings) {
    this.keys = createRemoteJWKSet(new URL(settings.jwksUrl), { timeoutDuration: 5_000, cooldownDuration: 30_000 });
  }

  /** @throws MeshError UNAUTHENTICATED naming what failed (signature, expiry, issuer, audience, no subject, no scope). */
  async verify(token: string): Promise<Caller> {
    let payload: Record<string, unknown>;
    try {
      // `exp` is required: a JWT without one would be accepted forever.
      ({ payload } = await jwtVerify(token, this.keys, { issuer: this.settings.issuer, audience: this.settings.audience, requiredClaims: ['exp'] }));
    } catch (err) {
      const code = (err as { code?: string }).code;
      const missingExp = code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && (err as { claim?: string }).claim === 'exp';
      const why = code === 'ERR_JWT_EXPIRED' ? 'it has expired'
        : missingExp ? 'it has no expiry (exp)'
        : code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' ? `claim check failed (${(err as Error).message})`
        : code === 'ERR_JWKS_NO_MATCHING_KEY' || code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' ? 'its signature does not verify'
        : (err as Error).message;
      throw new MeshError('UNAUTHENTICATED', `the JWT is not accepted: ${why}`);
    }
    const max = this.settings.maxLifetimeSeconds ?? DEFAULT_JWT_MAX_LIFETIME_S;
    const from = typeof payload.iat === 'number' ? payload.iat : Math.floor(Date.now() / 1000);
    if ((payload.exp as number) - from > max) {
      throw new MeshError('UNAUTHENTICATED', `the JWT is not accepted: it lives longer than ${max} s (KEELSON_JWT_MAX_LIFETIME_S)`);
    }
    if (typeof payload.sub !== 'string' || payload.sub.length === 0) throw new MeshError('UNAUTHENTICATED', 'the JWT is not accepted: it has no subject');
    const granted = scopesOf(payload[this.settings.scopeClaim ?? 'scope']);
    if (granted.length === 0) {
      throw new MeshError('UNAUTHENTICATED', `the JWT is not accepted: its "${this.settings.scopeClaim ?? 'scope'}" claim grants none of ${meshScopes.join(', ')}`);
    }
    return { subject: payload.sub, kind: 'jwt', scopes: effectiveScopes(granted) };
  }
}
