/** `npm run gen:docs`: writes the API reference generated from the zod schemas into docs/reference/. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REFERENCE_FILE, formattedReference } from '../operator/card/reference.ts';

const target = fileURLToPath(new URL(`../${REFERENCE_FILE}`, import.meta.url));
mkdirSync(dirname(target), { recursive: true });
writeFileSync(target, await formattedReference());
process.stdout.write(`wrote ${REFERENCE_FILE}\n`);
