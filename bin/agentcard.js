#!/usr/bin/env node
// Entry point of the `agentcard` command.
// - In a checkout (operator/ is here) it runs the TypeScript sources, which Node.js 24 runs
//   directly (type stripping): no build step between an edit and a run, and never a stale build.
// - In the npm package and the container image (no operator/, only dist/) it runs the bundle that
//   `npm run build` makes (build/bundle.ts): plain JavaScript, which Node.js 22 runs too.
import { existsSync } from 'node:fs';
import { URL } from 'node:url';

const [major] = process.versions.node.split('.').map(Number);
const sources = new URL('../operator/cli/main.ts', import.meta.url);
const fromSources = existsSync(sources);
const required = fromSources ? 24 : 22;
if (major < required) {
  process.stderr.write(
    `agentcard: Node.js ${required} or newer is required (this is ${process.version})` +
      (fromSources
        ? '; in a checkout, run it through npm (`npx agentcard`), which uses the Node.js 24 that `npm ci` installs\n'
        : '\n'),
  );
  process.exit(2);
}
const { runCli } = await import(fromSources ? sources.href : '../dist/agentcard.js');
await runCli(process.argv.slice(2));
