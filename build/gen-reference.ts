/** `npm run gen:docs`: writes the API references generated from the zod schemas into docs/reference/. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REFERENCE_FILE, formattedReference } from '../operator/card/reference.ts';
import { CATALOG_REFERENCE_FILE, formattedCatalogReference } from '../operator/catalog/reference.ts';
import { IMPORT_REFERENCE_FILE, formattedImportReference } from '../operator/federation/reference.ts';

for (const [file, text] of [
  [REFERENCE_FILE, formattedReference],
  [CATALOG_REFERENCE_FILE, formattedCatalogReference],
  [IMPORT_REFERENCE_FILE, formattedImportReference],
] as const) {
  const target = fileURLToPath(new URL(`../${file}`, import.meta.url));
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, await text());
  process.stdout.write(`wrote ${file}\n`);
}
