import { randomBytes } from 'node:crypto';

/** One server-sent event. `delta` marks the frames a slow reply spaces out. */
export interface Frame {
  /** The `event:` line; Chat Completions sends none. */
  event?: string;
  data: string;
  delta?: boolean;
}

/** A rendered answer: a stream of frames, or one JSON body. */
export type Rendered = { stream: Frame[] } | { json: unknown };

const MAX_PIECES = 32;

/**
 * Splits text into the deltas a model would stream: one per word (with its trailing whitespace),
 * merged evenly when there would be more than 32. Joining the pieces gives the text back.
 */
export function textPieces(text: string): string[] {
  if (text === '') return [];
  return merge(text.match(/\s*\S+\s*/g) ?? [text]);
}

/** Splits tool arguments or input into slices of 24 characters (at most 32 of them). */
export function argumentPieces(text: string): string[] {
  if (text === '') return [];
  const slices: string[] = [];
  for (let i = 0; i < text.length; i += 24) slices.push(text.slice(i, i + 24));
  return merge(slices);
}

function merge(pieces: string[]): string[] {
  if (pieces.length <= MAX_PIECES) return pieces;
  const per = Math.ceil(pieces.length / MAX_PIECES);
  const merged: string[] = [];
  for (let i = 0; i < pieces.length; i += per) merged.push(pieces.slice(i, i + per).join(''));
  return merged;
}

/** A `<prefix>_<hex>` id like the providers mint (`msg`, `resp`, `chatcmpl`…). */
export function newId(prefix: string, separator = '_'): string {
  return `${prefix}${separator}${randomBytes(12).toString('hex')}`;
}
