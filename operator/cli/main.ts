/**
 * The `agentcard` command: one dispatcher, one module per subcommand in ./commands, loaded
 * only when used so that `agentcard sidecar` does not load the Kubernetes client.
 */
import { UserError, describeError } from '../errors.ts';
import { VERSION } from '../version.ts';

type Command = { summary: string; load: () => Promise<{ run(argv: string[]): Promise<number> }> };

const commands: Record<string, Command> = {
  validate: {
    summary: 'validate AgentCard manifests or card JSON',
    load: () => import('./commands/validate.ts'),
  },
  policy: {
    summary: 'check cards against AgentPolicy and ClusterAgentPolicy files (policy check)',
    load: () => import('./commands/policy.ts'),
  },
  render: {
    summary: 'render the served card (v1 or v0.3) from a manifest',
    load: () => import('./commands/render.ts'),
  },
  sign: {
    summary: 'sign a card with one or more keys (JCS + detached JWS)',
    load: () => import('./commands/sign.ts'),
  },
  verify: { summary: 'verify a signed card against a JWKS', load: () => import('./commands/verify.ts') },
  keygen: { summary: 'generate a private signing JWK', load: () => import('./commands/keygen.ts') },
  probe: {
    summary: 'prove that each interface speaks its declared binding',
    load: () => import('./commands/probe.ts'),
  },
  diff: {
    summary: 'list the changes between two cards: breaking, compatible or descriptive',
    load: () => import('./commands/diff.ts'),
  },
  discover: {
    summary: 'find agents from a host or an AI Catalog and verify every card',
    load: () => import('./commands/discover.ts'),
  },
  sidecar: {
    summary: 'serve a published card at /.well-known/',
    load: () => import('./commands/sidecar.ts'),
  },
  'card-server': {
    summary: 'serve every centrally served card by Host, from the published ConfigMaps',
    load: () => import('./commands/card-server.ts'),
  },
  operator: {
    summary: 'run the controller (and its admission webhook)',
    load: () => import('./commands/operator.ts'),
  },
  'demo-agent': {
    summary: 'run the demo A2A agent that examples/ point at (echo; no authentication)',
    load: () => import('./commands/demo-agent.ts'),
  },
};

function usage(): string {
  const width = Math.max(...Object.keys(commands).map((c) => c.length));
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return `usage: agentcard <command> [options]\n       agentcard --version\n\ncommands:\n${lines.join('\n')}\n\nRun 'agentcard <command> --help' for a command's options.\n`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    return name ? 0 : 2;
  }
  if (name === '--version' || name === 'version') {
    process.stdout.write(`agentcard ${VERSION}\n`);
    return 0;
  }
  const command = commands[name];
  if (!command)
    throw new UserError(`unknown command '${name}' (known: ${Object.keys(commands).join(', ')})`, 2);
  const module = await command.load();
  return module.run(rest);
}

/** Runs one command line and sets the exit code (bin/agentcard.js calls this). */
export async function runCli(argv: string[]): Promise<void> {
  await main(argv).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      // Every failure ends as one line on stderr; stack traces only when asked for.
      const code = err instanceof UserError ? err.exitCode : 1;
      process.stderr.write(`agentcard: ${describeError(err)}\n`);
      if (process.env.AGENTCARD_DEBUG && err instanceof Error && err.stack)
        process.stderr.write(err.stack + '\n');
      process.exitCode = code;
    },
  );
}
