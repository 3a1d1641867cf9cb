/**
 * `npm run bench`: runs every bench/*.bench.ts in turn, each in its own Node.js process (so one
 * benchmark's JIT and heap state does not colour the next). `npm run bench -- card` runs only
 * the files whose name contains "card". Each benchmark writes its section of docs/BENCHMARKS.md.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('.', import.meta.url));
const filters = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

if (files.length === 0) {
  process.stderr.write(`no benchmark matches ${filters.join(', ') || '*.bench.ts'}\n`);
  process.exit(1);
}
let failed = 0;
for (const file of files) {
  process.stdout.write(`\n== ${file}\n`);
  const r = spawnSync(process.execPath, [fileURLToPath(new URL(file, import.meta.url))], {
    stdio: 'inherit',
  });
  if (r.status !== 0) {
    failed++;
    process.stderr.write(`${file} failed (exit ${r.status ?? r.signal})\n`);
  }
}
process.exit(failed === 0 ? 0 : 1);
