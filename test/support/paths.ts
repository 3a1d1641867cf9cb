/** Where things are in the checkout: every file a test reads lives inside the repository. */
import { join, resolve } from 'node:path';

export const repoRoot = resolve(import.meta.dirname, '..', '..');

/** A file under `test/fixtures/` (vendored conformance data, cards, manifests). */
export function fixturePath(rel: string): string {
  return join(repoRoot, 'test', 'fixtures', rel);
}
