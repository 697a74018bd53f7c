import { runLimits, utf8Bytes } from '@keelson/schema';
import { z } from 'zod';

/** A steering note (an op's, a prompt node's): not empty, at most `runLimits.steerNoteBytes`. */
export const steerNoteSchema = z
  .string()
  .refine((s) => s.trim() !== '', 'must not be empty')
  .refine((s) => utf8Bytes(s) <= runLimits.steerNoteBytes, `must be at most ${runLimits.steerNoteBytes} bytes`);

/** A steer's caller key: a retry with the same key is the same steer. */
export const steerKeySchema = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(runLimits.steerKeyChars, `must be at most ${runLimits.steerKeyChars} characters`)
  .nullish();
