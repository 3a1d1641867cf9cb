/** `npm run gen:crd`: writes the AgentCard CRD generated from the zod schemas into crds/. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CRD_FILE, crdYaml } from './crd.ts';

const target = fileURLToPath(new URL(`../../${CRD_FILE}`, import.meta.url));
mkdirSync(dirname(target), { recursive: true });
writeFileSync(target, crdYaml());
process.stdout.write(`wrote ${CRD_FILE}\n`);
