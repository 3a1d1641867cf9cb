/**
 * `agentcard demo-agent [--address ADDR] [--port 8080] [--grpc-port 8081] [--description TEXT]`: the demo A2A agent
 * (../../demo/echo-agent.ts), an echo agent on JSON-RPC and HTTP+JSON (one port) and gRPC, so that
 * the examples of the repository have a real agent to probe (examples/demo-agent.yaml runs it
 * from the operator's image). Prints one JSON line with its interface URLs, then serves until
 * SIGTERM/SIGINT. Not for production: no authentication, tasks kept in memory.
 *
 * The npm package leaves it out (package.json "files"): the agent bundles an HTTP framework and
 * a gRPC server the CLI has no other use for.
 */
import { UserError } from '../../errors.ts';
import { parseFlags } from '../input.ts';
import type * as EchoAgent from '../../demo/echo-agent.ts';

const USAGE = `usage: agentcard demo-agent [--address ADDR] [--port 8080] [--grpc-port 8081] [--description TEXT]

Runs the demo A2A agent: it echoes every message, speaks A2A 1.0 (and v0.3) on JSON-RPC at
/a2a/jsonrpc and HTTP+JSON at /a2a/rest (--port, which also answers GET /healthz and serves the
agent's own card at /.well-known/agent-card.json) and gRPC (--grpc-port). Prints its interface
URLs as one JSON line. No authentication: a demo only.

  --address ADDR    listen address (default 0.0.0.0; :: for IPv6)
  --port N          JSON-RPC and HTTP+JSON port (default 8080; 0 picks a free port)
  --grpc-port N     gRPC port (default 8081; 0 picks a free port)
  --description T   the description of the agent's own card
`;

function portFlag(name: string, text: string): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value > 65535)
    throw new UserError(
      `demo-agent: ${name} must be an integer from 0 to 65535, got '${text.slice(0, 20)}'`,
      2,
    );
  return value;
}

export async function run(argv: string[]): Promise<number> {
  const parsed = parseFlags(
    argv,
    {
      address: { type: 'string', default: '0.0.0.0' },
      port: { type: 'string', default: '8080' },
      'grpc-port': { type: 'string', default: '8081' },
      description: { type: 'string' },
    },
    USAGE,
  );
  if (!parsed) return 0;
  const { values } = parsed;
  const port = portFlag('--port', values.port);
  const grpcPort = portFlag('--grpc-port', values['grpc-port']);
  if (port !== 0 && port === grpcPort)
    throw new UserError('demo-agent: --port and --grpc-port must differ', 2);
  // Loaded here, not at the top: the npm package has no chunk for it (see above).
  let agentModule: typeof EchoAgent;
  try {
    agentModule = await import('../../demo/echo-agent.ts');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND')
      throw new UserError(
        'demo-agent: not in this package; it ships in the operator image (agentcard demo-agent) and runs from a checkout (npm run demo)',
      );
    throw err;
  }
  const agent = await agentModule
    .startDemoAgent({
      host: values.address,
      port,
      grpcPort,
      ...(values.description !== undefined ? { description: values.description } : {}),
    })
    .catch((err: unknown) => {
      const e = err as NodeJS.ErrnoException;
      throw new UserError(
        `demo-agent: cannot listen on ${values.address}: ${e.code ?? ''} ${e.message ?? String(err)}`.replace(
          /\s+/g,
          ' ',
        ),
      );
    });
  const { close, ...urls } = agent;
  process.stdout.write(JSON.stringify(urls) + '\n');
  await new Promise<void>((resolve) => {
    const stop = () => void close().then(resolve);
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  return 0;
}
