/**
 * `npm run gen:crd`: writes the CRDs generated from the zod schemas (AgentCard, the catalogs)
 * into crds/, and the chart's nesting policy generated from the AgentCard CRD.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CRD_FILE, crdYaml, nestingPolicyYaml } from '../operator/card/crd.ts';
import { POLICY_TEMPLATE_FILE } from '../operator/card/nesting-policy.ts';
import { CATALOG_CRDS } from '../operator/catalog/crd.ts';

for (const { file, text } of [
  { file: CRD_FILE, text: crdYaml },
  ...CATALOG_CRDS,
  { file: POLICY_TEMPLATE_FILE, text: nestingPolicyYaml },
]) {
  const target = fileURLToPath(new URL(`../${file}`, import.meta.url));
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, text());
  process.stdout.write(`wrote ${file}\n`);
}
