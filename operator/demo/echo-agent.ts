/**
 * The demo A2A agent: a real @a2a-js/sdk server speaking A2A 1.0 on JSON-RPC and HTTP+JSON
 * (one HTTP port, which also answers GET /healthz) and gRPC (another), plus their v0.3 forms
 * through the SDK's compatibility layer. It echoes every message back, and serves the card the SDK
 * holds at /.well-known/agent-card.json (A2A spec section 8.2), as agents built on the SDKs do:
 * an agent the operator can adopt (docs/adopt.md). That card advertises the address the agent
 * listens on (127.0.0.1 for every interface), the kind of URL an adopting AgentCard's overlay
 * fixes.
 *
 * `npm run demo` runs it as a local process on 127.0.0.1; examples/demo-agent.yaml runs it in a
 * cluster from the operator's image (`agentcard demo-agent`, ../cli/commands/demo-agent.ts), so
 * the AgentCards of examples/ have a real agent to probe. Not for production: no authentication,
 * tasks kept in memory.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import express from 'express';
import * as grpc from '@grpc/grpc-js';
import { Role, type AgentCard } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { A2AService, grpcService } from '@a2a-js/sdk/server/grpc';
import { LegacyA2AService, legacyGrpcService } from '@a2a-js/sdk/compat/v0_3/server/grpc';

/** Interface URLs; gRPC as `http://127.0.0.1:port` (h2c), the form a card's `url` (format uri) takes. */
export type DemoAgentUrls = { jsonrpc: string; rest: string; grpc: string };
export type DemoAgent = DemoAgentUrls & { close(): Promise<void> };

/** Answers each message with the text it received. */
const echo: AgentExecutor = {
  execute: async (ctx, bus) => {
    const text = ctx.userMessage.parts
      .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
      .join(' ')
      .trim();
    bus.publish({
      kind: 'message',
      data: {
        messageId: randomUUID(),
        contextId: ctx.contextId,
        taskId: '',
        role: Role.ROLE_AGENT,
        parts: [
          {
            content: { $case: 'text', value: `echo: ${text}` },
            metadata: undefined,
            filename: '',
            mediaType: 'text/plain',
          },
        ],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
    });
    bus.finished();
  },
  cancelTask: async () => {},
};

/** The description of the agent's own card unless DemoAgentOptions.description says otherwise. */
export const DEMO_AGENT_DESCRIPTION = 'Echoes every message; the agentcard-operator demo agent';

/** The card the SDK itself holds and serves (an AgentCard resource may publish its own instead). */
function sdkCard(urls: DemoAgentUrls, description: string): AgentCard {
  const iface = (url: string, protocolBinding: string) => ({
    url,
    protocolBinding,
    protocolVersion: '1.0',
    tenant: '',
  });
  return {
    name: 'Demo echo agent',
    description,
    version: '1.0.0',
    supportedInterfaces: [
      iface(urls.jsonrpc, 'JSONRPC'),
      iface(urls.rest, 'HTTP+JSON'),
      iface(urls.grpc, 'GRPC'),
    ],
    provider: undefined,
    capabilities: { streaming: false, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
    signatures: [],
  };
}

/** Where the agent listens; port 0 picks a free port. */
export type DemoAgentOptions = {
  /** Listen address of both ports; default 127.0.0.1. `::` or `0.0.0.0`: every interface. */
  host?: string;
  /** JSON-RPC and HTTP+JSON port (and /healthz); default 0. */
  port?: number;
  /** gRPC port (h2c); default 0. */
  grpcPort?: number;
  /** The description of its own card; default DEMO_AGENT_DESCRIPTION. */
  description?: string;
};

/** `http://HOST:PORT` with an IPv6 address in brackets; an unspecified address is advertised as loopback. */
function origin(host: string, port: number): string {
  const shown = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${shown.includes(':') ? `[${shown}]` : shown}:${port}`;
}

export async function startDemoAgent(opts: DemoAgentOptions = {}): Promise<DemoAgent> {
  const host = opts.host ?? '127.0.0.1';
  const app = express();
  // For a kubelet's readiness probe: the A2A paths answer POST only.
  app.get('/healthz', (_req, res) => void res.type('text/plain').send('ok\n'));
  const server = http.createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const base = origin(host, (server.address() as AddressInfo).port);

  const grpcServer = new grpc.Server();
  const grpcHost = host.includes(':') ? `[${host}]` : host;
  const grpcPort = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync(
      `${grpcHost}:${opts.grpcPort ?? 0}`,
      grpc.ServerCredentials.createInsecure(),
      (err, port) => (err ? reject(err) : resolve(port)),
    ),
  ).catch(async (err: unknown) => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw err;
  });
  const urls: DemoAgentUrls = {
    jsonrpc: `${base}/a2a/jsonrpc`,
    rest: `${base}/a2a/rest`,
    grpc: origin(host, grpcPort),
  };

  const card = sdkCard(urls, opts.description ?? DEMO_AGENT_DESCRIPTION);
  const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), echo);
  const userBuilder = UserBuilder.noAuthentication;
  // The SDK's own card endpoint, as an agent written with it serves its card.
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: requestHandler }));
  const legacyCompat = { enabled: true };
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder, legacyCompat }));
  app.use('/a2a/rest', restHandler({ requestHandler, userBuilder, legacyCompat }));
  grpcServer.addService(A2AService, grpcService({ requestHandler, userBuilder }));
  grpcServer.addService(LegacyA2AService, legacyGrpcService({ requestHandler, userBuilder }));

  return {
    ...urls,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await new Promise<void>((resolve) => grpcServer.tryShutdown(() => resolve()));
    },
  };
}
