/** `npm run gen:crd`: writes the CRDs generated from the zod schemas (AgentCard, the catalogs) into crds/. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CRD_FILE, crdYaml } from '../operator/card/crd.ts';
import { CATALOG_CRDS } from '../operator/catalog/crd.ts';

for (const { file, text } of [{ file: CRD_FILE, text: crdYaml }, ...CATALOG_CRDS]) {
  const target = fileURLToPath(new URL(`../${file}`, import.meta.url));
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, text());
  process.stdout.write(`wrote ${file}\n`);
}
