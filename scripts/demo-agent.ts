/**
 * The demo's A2A agent: a real @a2a-js/sdk server speaking A2A 1.0 on JSON-RPC and HTTP+JSON
 * (one HTTP port) and gRPC (another), on 127.0.0.1 only, plus their v0.3 forms through the
 * SDK's compatibility layer. It echoes every message back.
 *
 * Run alone: `node scripts/demo-agent.ts` prints one JSON line with its three interface URLs
 * on stdout and serves until SIGINT/SIGTERM.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import express from 'express';
import * as grpc from '@grpc/grpc-js';
import { Role, type AgentCard } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
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

/** The card the SDK itself holds (the operator publishes its own, from the AgentCard resource). */
function sdkCard(urls: DemoAgentUrls): AgentCard {
  const iface = (url: string, protocolBinding: string) => ({
    url,
    protocolBinding,
    protocolVersion: '1.0',
    tenant: '',
  });
  return {
    name: 'Demo echo agent',
    description: 'Echoes every message; served by the agentcard-operator local demo',
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

export async function startDemoAgent(): Promise<DemoAgent> {
  const app = express();
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const grpcServer = new grpc.Server();
  const grpcPort = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) =>
      err ? reject(err) : resolve(port),
    ),
  );
  const urls: DemoAgentUrls = {
    jsonrpc: `${base}/a2a/jsonrpc`,
    rest: `${base}/a2a/rest`,
    grpc: `http://127.0.0.1:${grpcPort}`,
  };

  const requestHandler = new DefaultRequestHandler(sdkCard(urls), new InMemoryTaskStore(), echo);
  const userBuilder = UserBuilder.noAuthentication;
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

if (import.meta.main) {
  const agent = await startDemoAgent();
  const { close, ...urls } = agent;
  process.stdout.write(JSON.stringify(urls) + '\n');
  const stop = () => void close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
