import { z } from 'zod';
import { canvasKindSchema } from './canvas';

/**
 * A view binds one snapshot key (in the rib's namespace) to a canvas renderer. Pure presentation:
 * the manifest is built from it without invoking rib code, and it is re-read on every manifest
 * request, so a rib may append to its `views` array at runtime (then call `invalidateManifest`).
 */
export const ribViewDescriptorSchema = z.strictObject({
  key: z.string().min(1, 'a view key is required'),
  canvasKind: canvasKindSchema,
  title: z.string().optional(),
});
export type RibViewDescriptor = z.infer<typeof ribViewDescriptorSchema>;
