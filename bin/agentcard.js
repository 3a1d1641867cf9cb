#!/usr/bin/env node
// Entry point of the `agentcard` command. The sources are TypeScript that Node.js 24 runs
// directly (type stripping), so there is no build step between a checkout and a run.
const [major] = process.versions.node.split('.').map(Number);
if (major < 24) {
  process.stderr.write(
    `agentcard: Node.js 24 or newer is required (this is ${process.version}); ` +
      'run it through npm (`npx agentcard`), which uses the Node.js 24 that `npm ci` installs\n',
  );
  process.exit(2);
}
const { runCli } = await import('../operator/cli/main.ts');
await runCli(process.argv.slice(2));
