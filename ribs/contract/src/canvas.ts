import { z } from 'zod';

/**
 * How a view's payload renders: the closed enum. `markdown` and `view` (a structured document)
 * render natively, `html` in a sandboxed iframe, `log` verbatim in a monospace block (a non-string
 * payload is formatted as JSON).
 */
export const canvasKindSchema = z.enum(['markdown', 'view', 'html', 'log']);
export type CanvasKind = z.infer<typeof canvasKindSchema>;

/** A generic visual category a renderer maps to a colour; never a domain enum. */
export const canvasToneSchema = z.enum(['ok', 'warn', 'error', 'neutral', 'info', 'caution', 'brand', 'accent']);
export type CanvasTone = z.infer<typeof canvasToneSchema>;
