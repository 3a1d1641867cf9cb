/**
 * `npm run gen:crd`: writes the CRDs generated from the zod schemas (AgentCard, the catalogs, the policies, imports)
 * into crds/, the chart's CRD templates made from them (build/chart-crds.ts), and the chart's
 * nesting policy generated from the AgentCard CRD.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CRD_FILE, crdYaml, nestingPolicyYaml } from '../operator/card/crd.ts';
import { POLICY_TEMPLATE_FILE } from '../operator/card/nesting-policy.ts';
import { CATALOG_CRDS } from '../operator/catalog/crd.ts';
import { POLICY_CRDS } from '../operator/policy/crd.ts';
import { IMPORT_CRDS } from '../operator/federation/crd.ts';
import { CHART_CRDS, chartCrdTemplate } from './chart-crds.ts';

const crds = [{ file: CRD_FILE, text: crdYaml }, ...CATALOG_CRDS, ...POLICY_CRDS, ...IMPORT_CRDS];
const chartCrds = crds.map(({ file, text }) => {
  const target = CHART_CRDS.find((c) => c.file === file);
  if (!target) throw new Error(`${file} has no chart template in build/chart-crds.ts`);
  return { file: target.template, text: () => chartCrdTemplate(text()) };
});

for (const { file, text } of [
  ...crds,
  ...chartCrds,
  { file: POLICY_TEMPLATE_FILE, text: nestingPolicyYaml },
]) {
  const target = fileURLToPath(new URL(`../${file}`, import.meta.url));
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, text());
  process.stdout.write(`wrote ${file}\n`);
}
