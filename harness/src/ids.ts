import { MeshError, UUID_PATTERN } from '@keelson/schema';

/** The eight harnesses, exactly as the seed lists them (and in its order). */
export const HARNESS_IDS = ['claude-code', 'grok-build', 'kimi-code', 'hermes', 'codex', 'opencode', 'pi', 'qwen-code'] as const;
export type HarnessId = (typeof HARNESS_IDS)[number];
/** `<harness-id>:<native-id>`: the one canonical key of a session everywhere in the mesh. */
export type SessionId = `${HarnessId}:${string}`;

export interface ParsedSessionId {
  sessionId: SessionId;
  harnessId: HarnessId;
  nativeId: string;
}

const UUID = UUID_PATTERN;
const UUID_RE = new RegExp(`^${UUID}$`);

/** What each harness's native ids look like; an id of another shape never reaches a driver. */
export const nativeIdShapes: Record<HarnessId, { pattern: RegExp; description: string; uuid: boolean }> = {
  'claude-code': { pattern: UUID_RE, description: 'a lowercase UUID', uuid: true },
  'grok-build': { pattern: UUID_RE, description: 'a lowercase UUID', uuid: true },
  'kimi-code': { pattern: new RegExp(`^session_${UUID}$`), description: '`session_<uuid>`', uuid: false },
  hermes: { pattern: /^[0-9]{8}_[0-9]{6}_[0-9a-f]{4,64}$/, description: '`YYYYMMDD_HHMMSS_<hex>`', uuid: false },
  codex: { pattern: UUID_RE, description: 'a lowercase UUID (the thread id)', uuid: true },
  opencode: { pattern: /^ses_[0-9A-Za-z]{8,64}$/, description: '`ses_<id>`', uuid: false },
  pi: { pattern: UUID_RE, description: 'a lowercase UUID', uuid: true },
  'qwen-code': { pattern: UUID_RE, description: 'a lowercase UUID', uuid: true },
};

/**
 * The stores a bare UUID is probed in, in order (the seed: "claude, then grok, …"): every
 * UUID-shaped harness in seed order. kimi-code's `session_<uuid>` is never claimed by the probe.
 */
export const BARE_UUID_PROBE_ORDER: readonly HarnessId[] = HARNESS_IDS.filter((h) => nativeIdShapes[h].uuid);

const MAX_SESSION_ID_CHARS = 512;
const CONTROL = /[\u0000-\u001f\u007f]/;

export function isHarnessId(value: unknown): value is HarnessId {
  return typeof value === 'string' && (HARNESS_IDS as readonly string[]).includes(value);
}

/** A harness id or BAD_USER_INPUT naming the eight. */
export function requireHarnessId(value: string, field = 'harnessId'): HarnessId {
  if (!isHarnessId(value)) {
    throw new MeshError('BAD_USER_INPUT', `${field}: expected one of ${HARNESS_IDS.join(', ')}, got ${JSON.stringify(clipForMessage(value))}`);
  }
  return value;
}

function clipForMessage(s: string): string {
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/**
 * Splits a SessionId on its **first** colon (the native part may contain `:` and `/`) and checks
 * the harness part. Shape rules of the native part are {@link requireSessionId}'s.
 * @throws MeshError BAD_USER_INPUT for anything that is not `<harness-id>:<non-empty native>`.
 */
export function parseSessionId(raw: string, field = 'sessionId'): ParsedSessionId {
  if (typeof raw !== 'string' || raw.length === 0) throw new MeshError('BAD_USER_INPUT', `${field}: expected a SessionId <harness-id>:<native-id>, got an empty string`);
  if (raw.length > MAX_SESSION_ID_CHARS) throw new MeshError('BAD_USER_INPUT', `${field}: a SessionId has at most ${MAX_SESSION_ID_CHARS} characters, got ${raw.length}`);
  if (CONTROL.test(raw)) throw new MeshError('BAD_USER_INPUT', `${field}: a SessionId cannot contain control characters`);
  const colon = raw.indexOf(':');
  if (colon === -1) {
    throw new MeshError('BAD_USER_INPUT', `${field}: expected a SessionId <harness-id>:<native-id>, got ${JSON.stringify(clipForMessage(raw))} (no colon)`);
  }
  const harness = raw.slice(0, colon);
  const nativeId = raw.slice(colon + 1);
  if (!isHarnessId(harness)) {
    throw new MeshError('BAD_USER_INPUT', `${field}: unknown harness ${JSON.stringify(clipForMessage(harness))} (expected one of ${HARNESS_IDS.join(', ')})`);
  }
  if (nativeId.length === 0) throw new MeshError('BAD_USER_INPUT', `${field}: the native id after "${harness}:" is empty`);
  return { sessionId: raw as SessionId, harnessId: harness, nativeId };
}

/** True when `nativeId` has the shape `harnessId`'s store uses. */
export function isNativeIdOf(harnessId: HarnessId, nativeId: string): boolean {
  return nativeIdShapes[harnessId].pattern.test(nativeId);
}

/**
 * A SessionId whose native part has its harness's shape: the only kind of id a driver (and so any
 * path it builds) ever sees. @throws MeshError BAD_USER_INPUT
 */
export function requireSessionId(raw: string, field = 'sessionId'): ParsedSessionId {
  const parsed = parseSessionId(raw, field);
  if (!isNativeIdOf(parsed.harnessId, parsed.nativeId)) {
    throw new MeshError(
      'BAD_USER_INPUT',
      `${field}: ${parsed.harnessId} native ids are ${nativeIdShapes[parsed.harnessId].description}, got ${JSON.stringify(clipForMessage(parsed.nativeId))}`,
    );
  }
  return parsed;
}

export function formatSessionId(harnessId: HarnessId, nativeId: string): SessionId {
  return `${harnessId}:${nativeId}` as SessionId;
}

/** `enc(SessionId)`: the unpadded base64url of its UTF-8 bytes (gateway path parameters). */
export function encSessionId(sessionId: string): string {
  return Buffer.from(sessionId, 'utf8').toString('base64url');
}

const ENC_RE = /^[A-Za-z0-9_-]+$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The inverse of {@link encSessionId}. Rejects padding, other alphabets, impossible lengths,
 * non-canonical encodings (stray trailing bits), invalid UTF-8 and anything that does not decode
 * to a SessionId. @throws MeshError BAD_USER_INPUT
 */
export function decodeEnc(enc: string, field = 'enc'): ParsedSessionId {
  const bad = (why: string) => new MeshError('BAD_USER_INPUT', `${field}: expected the unpadded base64url of a SessionId, ${why}`);
  if (typeof enc !== 'string' || enc.length === 0) throw bad('got an empty string');
  if (enc.length > Math.ceil((MAX_SESSION_ID_CHARS * 4 * 4) / 3)) throw bad(`got ${enc.length} characters`);
  if (!ENC_RE.test(enc)) throw bad(enc.includes('=') ? 'got padding (=)' : 'got characters outside A-Z a-z 0-9 - _');
  if (enc.length % 4 === 1) throw bad(`got an impossible length (${enc.length})`);
  const bytes = Buffer.from(enc, 'base64url');
  if (bytes.toString('base64url') !== enc) throw bad('got a non-canonical encoding');
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw bad('which decodes to invalid UTF-8');
  }
  return parseSessionId(text, field);
}

/** What a client sent where a SessionId is expected, classified before any store is touched. */
export type SessionRef =
  | { kind: 'canonical'; parsed: ParsedSessionId }
  /** A bare UUID: probe these harnesses' stores in this order; the first that holds it claims it. */
  | { kind: 'bare-uuid'; nativeId: string; probe: readonly HarnessId[] };

const CLAUDE_PATH = new RegExp(`(?:^|/)projects/[^/]+/(${UUID})\\.jsonl$`);

/**
 * Classifies a session reference by the seed's rules: a canonical SessionId, split on its first
 * colon with any native part ("native may contain : and /"; bounded, no control characters) — it is
 * looked up as given, and a driver checks a native id's shape before building anything from it
 * ({@link isNativeIdOf}); a bare UUID, probed across the UUID-shaped stores in order; a legacy Claude
 * transcript path, read as its claude-code SessionId. A bare kimi `session_<uuid>` must be sent
 * canonical; anything else is malformed. @throws MeshError BAD_USER_INPUT
 */
export function classifySessionRef(raw: string, field = 'sessionId'): SessionRef {
  if (typeof raw === 'string' && !raw.includes(':')) {
    if (UUID_RE.test(raw)) return { kind: 'bare-uuid', nativeId: raw, probe: BARE_UUID_PROBE_ORDER };
    const claudePath = CLAUDE_PATH.exec(raw);
    if (claudePath) return { kind: 'canonical', parsed: requireSessionId(formatSessionId('claude-code', claudePath[1]!), field) };
    if (nativeIdShapes['kimi-code'].pattern.test(raw)) {
      throw new MeshError('BAD_USER_INPUT', `${field}: kimi-code native ids must be sent canonical (kimi-code:${raw}); the bare-id probe never claims them`);
    }
  }
  return { kind: 'canonical', parsed: parseSessionId(raw, field) };
}
