/**
 * Runs inside a network namespace that a test created (see probe-namespace-e2e.test.ts): the A2A
 * peers listening on every address of that namespace (the "Pod IPs" and "cluster IPs" the test
 * put on its loopback interface), a relay from 127.0.0.1:<API port> to the API server through a
 * Unix socket (a path-named socket crosses network namespaces), and the operator with no probe
 * setting at all. Prints one JSON line with the peers' port; stops on SIGTERM.
 *
 * Environment: API_SOCKET, API_PORT, NAMESPACE, KUBECONFIG_FILE.
 */
import { connect, createServer } from 'node:net';
import { parseOperatorFlags } from '../../operator/cli/commands/operator.ts';
import { createLogger } from '../../operator/log.ts';
import { runOperator } from '../../operator/manager/manager.ts';
import { startA2APeers } from './a2a-peers.ts';

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const relay = createServer((inbound) => {
  const outbound = connect(env('API_SOCKET'));
  inbound.pipe(outbound).pipe(inbound);
  const end = () => {
    inbound.destroy();
    outbound.destroy();
  };
  inbound.on('error', end);
  outbound.on('error', end);
});
await new Promise<void>((resolve) => relay.listen(Number(env('API_PORT')), '127.0.0.1', resolve));

const peers = await startA2APeers({ listen: '0.0.0.0' });
process.stdout.write(`${JSON.stringify({ port: Number(new URL(peers.jsonrpc).port) })}\n`);

const flags = parseOperatorFlags([
  '--kubeconfig',
  env('KUBECONFIG_FILE'),
  '--namespace',
  env('NAMESPACE'),
  '--no-leader-elect',
  '--metrics-port',
  '0',
  '--bind-address',
  '127.0.0.1',
  '--webhook-port',
  '0',
]);
if (flags === 'help') throw new Error('unexpected help');
const shutdown = new AbortController();
process.on('SIGTERM', () => shutdown.abort());
const code = await runOperator(flags, {
  signal: shutdown.signal,
  log: createLogger(
    { component: 'operator' },
    { level: 'info', write: (line) => process.stderr.write(line) },
  ),
});
await peers.close();
relay.close();
process.exit(code);
