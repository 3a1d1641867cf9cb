/**
 * Real servers on 127.0.0.1 for the discover tests: a plain node:http file server (catalogs and
 * cards as files), @a2a-js/sdk agents serving their own card (signed by the SDK's signer) and
 * answering A2A calls, and our sidecar serving a card signed by our signer from a directory.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { generateAgentCardSignature, type AgentCard as SdkCard } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import type { JWK } from '../../operator/card/sign.ts';
import { createLogger } from '../../operator/log.ts';
import { startSidecar } from '../../operator/sidecar/server.ts';

export interface Route {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface FileServer {
  origin: string;
  /** Path -> answer; change it between requests as the test needs. */
  routes: Map<string, Route>;
  /** Paths requested, in order, with their If-None-Match header. */
  seen: { path: string; ifNoneMatch?: string }[];
  close(): Promise<void>;
}

function listen(server: http.Server | https.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}

async function closeServer(server: http.Server | https.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** A plain file server: JSON by default, 404 for unknown paths. With `tls`, it speaks https. */
export async function startFileServer(tls?: { cert: string; key: string }): Promise<FileServer> {
  const routes = new Map<string, Route>();
  const seen: FileServer['seen'] = [];
  const handler: http.RequestListener = (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const inm = req.headers['if-none-match'];
    seen.push({ path, ...(inm ? { ifNoneMatch: inm } : {}) });
    const route = routes.get(path);
    if (!route) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const etag = route.headers?.etag;
    if (etag && inm === etag) {
      res
        .writeHead(304, {
          etag,
          ...(route.headers?.['cache-control'] ? { 'cache-control': route.headers['cache-control'] } : {}),
        })
        .end();
      return;
    }
    res
      .writeHead(route.status ?? 200, { 'content-type': 'application/json', ...route.headers })
      .end(route.body ?? '');
  };
  const server = tls ? https.createServer(tls, handler) : http.createServer(handler);
  const port = await listen(server);
  return {
    origin: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    routes,
    seen,
    close: () => closeServer(server),
  };
}

export const json = (value: unknown, headers: Record<string, string> = {}): Route => ({
  body: JSON.stringify(value),
  headers,
});

const executor: AgentExecutor = { execute: async () => {}, cancelTask: async () => {} };

export interface SdkAgent {
  origin: string;
  /** The card as the agent serves it. */
  card: SdkCard;
  close(): Promise<void>;
}

/**
 * An @a2a-js/sdk agent: JSON-RPC at /a2a, its card at /.well-known/agent-card.json through the
 * SDK's agentCardHandler, signed by the SDK's generateAgentCardSignature when `signWith` is
 * given. The card is as an SDK user writes it, default values included (streaming: false,
 * empty lists), which the SDK leaves out of what it signs.
 */
export async function startSdkAgent(opts: {
  name: string;
  skill: { id: string; tags: string[] };
  signWith?: JWK;
}): Promise<SdkAgent> {
  const app = express();
  const server = http.createServer(app);
  const port = await listen(server);
  const origin = `http://127.0.0.1:${port}`;
  let card: SdkCard = {
    name: opts.name,
    description: `${opts.name}, an @a2a-js/sdk agent for the discover tests`,
    version: '1.2.0',
    supportedInterfaces: [
      { url: `${origin}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
    ],
    capabilities: { streaming: false, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: opts.skill.id,
        name: opts.skill.id.replace(/-/g, ' '),
        description: `The ${opts.skill.id} skill.`,
        tags: opts.skill.tags,
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  } as unknown as SdkCard;
  if (opts.signWith) {
    const { kid, alg } = opts.signWith;
    card = await generateAgentCardSignature(opts.signWith, { alg: alg!, kid: kid!, typ: 'JOSE' })(card);
  }
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: async () => card }));
  app.use('/a2a', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  return { origin, card, close: () => closeServer(server) };
}

export interface SidecarServer {
  origin: string;
  close(): Promise<void>;
}

/** Our sidecar, serving `card` (and the JWKS, when given) from a directory, as in a Pod. */
export async function startCardSidecar(
  card: Record<string, unknown>,
  jwks?: unknown,
): Promise<SidecarServer> {
  const dir = await mkdtemp(join(tmpdir(), 'agentcard-discover-'));
  await writeFile(join(dir, 'agent-card.json'), JSON.stringify(card));
  if (jwks) await writeFile(join(dir, 'jwks.json'), JSON.stringify(jwks));
  const sidecar = await startSidecar({
    dir,
    port: 0,
    metricsPort: 0,
    host: '127.0.0.1',
    defaultMaxAgeSeconds: 60,
    logger: createLogger({}, { level: 'error', write: () => {} }),
  });
  for (let i = 0; i < 100 && !sidecar.current(); i++) await new Promise((r) => setTimeout(r, 20));
  if (!sidecar.current()) throw new Error('the sidecar did not load the card');
  return {
    origin: `http://127.0.0.1:${sidecar.port}`,
    close: async () => {
      await sidecar.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
