// A TCP relay on loopback in front of a real server (here the kube-apiserver), with a switch that
// makes it stop forwarding in both directions without closing anything: the partition that drops
// packets instead of refusing them. New connections are accepted and then hang too. heal() lets
// the traffic through again.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { writeFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';

export interface Relay {
  port: number;
  /** Stops forwarding; every connection stays open and silent. */
  stall(): void;
  /**
   * Forwards again, as a partition that heals: what each side sent meanwhile (held in the
   * sockets' buffers, as TCP would retransmit it) arrives now, and connections accepted while
   * stalled are connected through.
   */
  heal(): void;
  /** Connections accepted so far. */
  readonly connections: number;
  close(): Promise<void>;
}

export async function startRelay(targetHost: string, targetPort: number): Promise<Relay> {
  let stalled = false;
  let connections = 0;
  const sockets = new Set<Socket>();
  /** Connections accepted while stalled, to connect through once healed. */
  let waiting: Array<() => void> = [];
  const track = (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
    if (stalled) s.pause();
  };
  const link = (client: Socket) => {
    if (client.destroyed) return;
    const upstream = connect(targetPort, targetHost);
    track(upstream);
    // Paused sockets (stall) emit nothing: the bytes wait in their buffers, nothing is dropped.
    const forward = (from: Socket, to: Socket) => {
      from.on('data', (chunk: Buffer) => to.write(chunk));
      from.on('end', () => to.end());
      from.on('close', () => to.destroy());
    };
    forward(client, upstream);
    forward(upstream, client);
  };
  const server: Server = createServer((client) => {
    connections++;
    track(client);
    if (stalled) waiting.push(() => link(client));
    else link(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    stall: () => {
      stalled = true;
      for (const s of sockets) s.pause();
    },
    heal: () => {
      stalled = false;
      for (const s of sockets) s.resume();
      const queued = waiting;
      waiting = [];
      for (const connectThrough of queued) connectThrough();
    },
    get connections() {
      return connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Writes a copy of `kc` whose current cluster is reached through the relay; returns its path. */
export function kubeconfigThrough(kc: KubeConfig, relay: Relay, file: string): string {
  const cluster = kc.getCurrentCluster()!;
  const url = new URL(cluster.server);
  url.port = String(relay.port);
  const copy = JSON.parse(kc.exportConfig()) as {
    clusters: Array<{ name: string; cluster: { server: string } }>;
  };
  for (const c of copy.clusters)
    if (c.name === cluster.name) c.cluster.server = url.toString().replace(/\/$/, '');
  writeFileSync(file, JSON.stringify(copy));
  return file;
}
