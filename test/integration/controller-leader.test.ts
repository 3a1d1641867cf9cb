// Leader election on a real coordination.k8s.io Lease: the elector itself, then two real
// operator processes (bin/agentcard.js operator) with one leader and a failover.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { CoordinationV1Api, RbacAuthorizationV1Api, Watch, type V1Lease } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TIMING, LeaderElector, type LeaseStore } from '../../operator/kube/leader.ts';
import { KubeClient } from '../../operator/kube/client.ts';
import { kubeLeaseStore } from '../../operator/kube/lease.ts';
import { createLogger } from '../../operator/log.ts';
import {
  createTestNamespace,
  kubeConfig,
  kubeconfigPath,
  saveKubeConfig,
  serviceAccountKubeConfig,
  type TestNamespace,
} from '../support/cluster.ts';
import {
  Api,
  condition,
  installCrd,
  sampleCard,
  spawnOperator,
  waitFor,
  type ChildOperator,
} from '../support/operator.ts';
import { ApiRelay } from '../support/api-relay.ts';
import { kubeconfigThrough, startRelay, type Relay } from '../support/relay.ts';
import { captureLogs } from '../support/logs.ts';

const kc = kubeConfig();
const api = new Api(kc);
const leases = kc.makeApiClient(CoordinationV1Api);
const quiet = createLogger({}, { write: () => {} });
const fast = { leaseDurationSeconds: 3, renewDeadlineMs: 2_000, retryPeriodMs: 300 };
let ns: TestNamespace;

beforeAll(async () => {
  await installCrd(kc);
  ns = await createTestNamespace('controller-leader');
});

afterAll(async () => {
  await ns?.cleanup();
});

describe('LeaderElector on a real Lease', () => {
  it('says once, as a warning, why it cannot take the lease (here: no RBAC for leases)', async () => {
    const { lines, log } = captureLogs('info');
    const saKc = await serviceAccountKubeConfig(ns.name, 'no-leases');
    const elector = new LeaderElector(
      kubeLeaseStore(new KubeClient(saKc), ns.name, 'denied'),
      'x',
      log,
      fast,
    );
    for (let i = 0; i < 3; i++) expect(await elector.tryAcquireOrRenew()).toBe(false);
    const warnings = lines.filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ msg: 'cannot take or renew the leader lease; retrying' });
    expect(String(warnings[0]!.error)).toMatch(
      /^HTTP 403: leases\.coordination\.k8s\.io "denied" is forbidden/,
    );
  });

  it('one holder at a time; release hands over at once; a renew that fails loses the lease', async () => {
    const store = kubeLeaseStore(new KubeClient(kc), ns.name, 'elector-test');
    // b's reads of the Lease, as the API server answered them: what each of its rounds decided on.
    const bReads: Array<{ at: number; holder?: string; renewTime?: string }> = [];
    const bStore: LeaseStore = {
      read: async (signal) => {
        const at = Date.now();
        const found = await store.read(signal);
        bReads.push({ at, holder: found?.record.holderIdentity, renewTime: found?.record.renewTime });
        return found;
      },
      create: (record, signal) => store.create(record, signal),
      write: (record, resourceVersion, signal) => store.write(record, resourceVersion, signal),
    };
    const a = new LeaderElector(store, 'a', quiet, fast);
    const b = new LeaderElector(bStore, 'b', quiet, fast);
    const stop = new AbortController();
    expect(await a.acquire(stop.signal)).toBe(true);
    expect(await b.tryAcquireOrRenew()).toBe(false);
    const lease = await leases.readNamespacedLease({ namespace: ns.name, name: 'elector-test' });
    expect(lease.spec?.holderIdentity).toBe('a');
    expect(lease.spec?.leaseDurationSeconds).toBe(3);

    // b campaigns while a holds and renews.
    const aStop = new AbortController();
    const aHolding = a.holdUntilLost(aStop.signal);
    const campaignFrom = bReads.length;
    const bAcquired = b.acquire(stop.signal);
    // b counts the lease duration from its first read: had a stopped renewing, b's first round
    // after that would take the Lease. Two rounds past it (the second starts after the first has
    // decided) prove b had its chance.
    const campaign = () => bReads.slice(campaignFrom);
    await waitFor(
      'two rounds of b a lease duration after its first',
      async () => {
        const expiry = (campaign()[0]?.at ?? Infinity) + fast.leaseDurationSeconds * 1000;
        return b.isLeader || campaign().filter((r) => r.at > expiry).length >= 2;
      },
      20_000,
    );
    expect(b.isLeader).toBe(false);
    // What kept it: every round of b found a holding the Lease, with a renewTime a kept moving.
    expect(campaign().every((r) => r.holder === 'a')).toBe(true);
    expect(new Set(campaign().map((r) => r.renewTime)).size).toBeGreaterThanOrEqual(5);

    // a stops (as on SIGTERM) and steps down: b takes over without waiting for expiry.
    aStop.abort();
    expect((await aHolding).lost).toBe(false);
    const t0 = Date.now();
    await a.release();
    expect(a.isLeader).toBe(false);
    expect(await bAcquired).toBe(true);
    expect(Date.now() - t0).toBeLessThan(2_000);

    // Someone else overwrites the lease: b's next renew sees another holder and gives up.
    const current = await leases.readNamespacedLease({ namespace: ns.name, name: 'elector-test' });
    await leases.replaceNamespacedLease({
      namespace: ns.name,
      name: 'elector-test',
      body: { ...current, spec: { ...current.spec, holderIdentity: 'intruder' } },
    });
    const { lost } = await b.holdUntilLost(new AbortController().signal);
    expect(lost).toBe(true);
    expect(b.isLeader).toBe(false);
    stop.abort();
  });

  it('takes over an abandoned lease only after it expires', async () => {
    const store = kubeLeaseStore(new KubeClient(kc), ns.name, 'expiry-test');
    const gone = new LeaderElector(store, 'gone', quiet, fast);
    expect(await gone.tryAcquireOrRenew()).toBe(true); // then never renews (a killed process)
    const next = new LeaderElector(store, 'next', quiet, fast);
    const t0 = Date.now();
    expect(await next.acquire(new AbortController().signal)).toBe(true);
    const waited = Date.now() - t0;
    expect(waited).toBeGreaterThanOrEqual(2_900);
    expect(waited).toBeLessThan(6_000);
  });
  it('a watching standby takes over within leaseDuration + 0.9 s of the last renewal, never while the old leader leads', async () => {
    // A standby that only read the Lease every retry period (client-go) would see the last renewal
    // up to 3.6 s late, and its second read after that comes 6 to 7.2 s later, past the 5 s lease:
    // at least 1 s late. The watch bounds both by the API server's delivery.
    const timing = { leaseDurationSeconds: 5, renewDeadlineMs: 4_000, retryPeriodMs: 3_000 };
    const store = kubeLeaseStore(new KubeClient(kc), ns.name, 'watch-test');
    let partitioned = false;
    let lastRenewedAt = 0;
    let renewals = 0;
    const cut = () => Promise.reject(new Error('partitioned'));
    // a's view of the API server, which stops answering it (as for a leader whose node is cut off).
    const aStore: LeaseStore = {
      read: (signal) => (partitioned ? cut() : store.read(signal)),
      create: (record, signal) => (partitioned ? cut() : store.create(record, signal)),
      write: async (record, resourceVersion, signal) => {
        if (partitioned) return cut();
        const answer = await store.write(record, resourceVersion, signal);
        lastRenewedAt = Date.now();
        renewals++;
        return answer;
      },
    };
    const a = new LeaderElector(aStore, 'a', quiet, timing);
    const b = new LeaderElector(store, 'b', quiet, timing);
    const stop = new AbortController();
    expect(await a.acquire(stop.signal)).toBe(true);
    let aLostAt = 0;
    void a.holdUntilLost(stop.signal).then(() => (aLostAt = Date.now()));
    let bLeadsAt = 0;
    const bLeads = b.acquire(stop.signal).then((won) => {
      bLeadsAt = Date.now();
      return won;
    });
    let both = 0;
    const sampler = setInterval(() => (both += a.isLeader && b.isLeader ? 1 : 0), 10);
    try {
      await waitFor('two renewals by a', async () => renewals >= 2);
      partitioned = true;
      expect(await bLeads).toBe(true);
    } finally {
      clearInterval(sampler);
      stop.abort();
    }
    const takeoverMs = bLeadsAt - lastRenewedAt;
    console.info(`watching standby: took the Lease ${takeoverMs} ms after the last renewal`);
    expect(both).toBe(0);
    expect(aLostAt).toBeGreaterThan(0);
    expect(aLostAt).toBeLessThanOrEqual(bLeadsAt);
    expect(takeoverMs).toBeGreaterThanOrEqual(timing.leaseDurationSeconds * 1000 - 300);
    expect(takeoverMs).toBeLessThanOrEqual(timing.leaseDurationSeconds * 1000 + 900);
  });
});

describe('two operator processes', () => {
  const procs: ChildOperator[] = [];
  afterAll(async () => {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  });

  const leaderFlags = [
    '--leader-elect',
    '--leader-election-namespace',
    '',
    '--leader-election-id',
    'agentcard-operator-test',
    '--lease-duration',
    '4s',
    '--renew-deadline',
    '3s',
    '--retry-period',
    '500ms',
    '--no-probes',
  ];

  it('run with one leader, fail over when it is killed, and hand over on SIGTERM', async () => {
    const flags = leaderFlags.map((f) => (f === '' ? ns.name : f));
    const one = spawnOperator(ns.name, flags);
    const two = spawnOperator(ns.name, flags);
    procs.push(one, two);
    const [portOne, portTwo] = await Promise.all([one.metricsPort(), two.metricsPort()]);

    const leader = await waitFor('a leader', async () => {
      const winners = [one, two].filter((p) => p.lines.some((l) => l.includes('"msg":"became leader"')));
      return winners.length ? winners : undefined;
    });
    expect(leader).toHaveLength(1);
    const first = leader[0]!;
    const standby = first === one ? two : one;
    // Both are ready: the leader once its caches synced, the standby because it is a standby.
    await waitFor('both /readyz', async () => {
      const codes = await Promise.all(
        [portOne, portTwo].map(async (p) => (await fetch(`http://127.0.0.1:${p}/readyz`)).status),
      );
      return codes.every((c) => c === 200);
    });
    const identity = String((await first.waitForLog('became leader')).identity);
    const lease = await leases.readNamespacedLease({ namespace: ns.name, name: 'agentcard-operator-test' });
    expect(lease.spec?.holderIdentity).toBe(identity);

    await api.createCard(ns.name, 'one', { card: sampleCard('1.0.0') });
    await waitFor(
      'card one Ready',
      async () => condition(await api.getCard(ns.name, 'one'), 'Ready')?.status === 'True',
    );
    expect(standby.lines.some((l) => l.includes('"msg":"reconciled"'))).toBe(false);

    // Kill the leader: the standby takes over after the lease expires (4 s).
    const t0 = Date.now();
    first.child.kill('SIGKILL');
    await first.exited;
    await standby.waitForLog('became leader', 20_000);
    expect(Date.now() - t0).toBeLessThan(15_000);
    await api.createCard(ns.name, 'two', { card: sampleCard('1.0.0') });
    await waitFor(
      'card two Ready',
      async () => condition(await api.getCard(ns.name, 'two'), 'Ready')?.status === 'True',
    );

    // SIGTERM: finish, release the lease, exit 0 well within a 30 s grace period.
    const t1 = Date.now();
    standby.child.kill('SIGTERM');
    expect(await standby.exited).toBe(0);
    expect(Date.now() - t1).toBeLessThan(10_000);
    const released = await leases.readNamespacedLease({
      namespace: ns.name,
      name: 'agentcard-operator-test',
    });
    expect(released.spec?.holderIdentity ?? '').toBe('');
    expect(standby.lines.some((l) => l.includes('"msg":"released the leader lease"'))).toBe(true);
  });
});

describe('a leader whose connection to the API server hangs', () => {
  const procs: ChildOperator[] = [];
  let relay: Relay | undefined;
  afterAll(async () => {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await relay?.close();
  });

  it('stops and exits within the renew deadline, before the standby takes the Lease (default timings)', async () => {
    // The leader reaches the real API server through a relay that will stop forwarding without
    // closing; the standby connects directly. Default timings: lease 15 s, renew deadline 10 s.
    const server = new URL(kc.getCurrentCluster()!.server);
    relay = await startRelay(server.hostname, Number(server.port));
    const dir = mkdtempSync(join(tmpdir(), 'leader-hang-'));
    const relayed = kubeconfigThrough(kc, relay, join(dir, 'kubeconfig'));
    const id = 'hang-test';
    const flags = [
      '--leader-elect',
      '--leader-election-namespace',
      ns.name,
      '--leader-election-id',
      id,
      '--no-probes',
    ];
    const holder = async () =>
      (await leases.readNamespacedLease({ namespace: ns.name, name: id }).catch(() => undefined))?.spec
        ?.holderIdentity ?? '';

    const leader = spawnOperator(ns.name, flags, {
      kubeconfig: relayed,
      env: { POD_NAME: 'relayed-leader' },
    });
    procs.push(leader);
    await waitFor('the relayed operator to lead', async () => (await holder()).startsWith('relayed-leader_'));
    const standby = spawnOperator(ns.name, flags, { env: { POD_NAME: 'direct-standby' } });
    procs.push(standby);
    await standby.metricsPort();
    await api.createCard(ns.name, 'hang-one', { card: sampleCard('1.0.0') });
    await waitFor(
      'card hang-one Ready (reconciled by the relayed leader)',
      async () => condition(await api.getCard(ns.name, 'hang-one'), 'Ready')?.status === 'True',
    );
    expect(await holder()).toMatch(/^relayed-leader_/);

    const hungAt = Date.now();
    relay.stall();
    let exitedAt = 0;
    const exit = leader.exited.then((code) => {
      exitedAt = Date.now();
      return code;
    });
    const takenAt = await waitFor(
      'the standby to take the Lease',
      async () => ((await holder()).startsWith('direct-standby_') ? Date.now() : undefined),
      40_000,
    );
    expect(await exit).toBe(1);
    const stopMs = exitedAt - hungAt;
    const takeoverMs = takenAt - hungAt;
    console.info(
      `hung connection: leader exited after ${stopMs} ms, standby took the Lease after ${takeoverMs} ms`,
    );
    // client-go's bound: renewDeadline (10 s) after the last renewal, so at most 10 s after the
    // hang; 12 s leaves room for process exit on a loaded machine. Never after the takeover.
    expect(stopMs).toBeLessThanOrEqual(12_000);
    expect(exitedAt).toBeLessThan(takenAt);

    // The new leader works.
    await api.createCard(ns.name, 'hang-two', { card: sampleCard('1.0.0') });
    await waitFor(
      'card hang-two Ready (reconciled by the new leader)',
      async () => condition(await api.getCard(ns.name, 'hang-two'), 'Ready')?.status === 'True',
    );
  });
});

describe('a leader whose controllers cannot start', () => {
  const procs: ChildOperator[] = [];
  let relay: ApiRelay | undefined;
  let leaseWatch: LeaseHistory | undefined;
  const stopStandby = new AbortController();
  afterAll(async () => {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    stopStandby.abort();
    leaseWatch?.stop();
    await relay?.close();
  });

  it('holds the Lease, releases it and exits 1, saying once why (here: RBAC denies listing Pods)', async () => {
    // A ServiceAccount that may do everything the operator does in the namespace except list Pods.
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: ns.name,
      body: {
        metadata: { name: 'no-pods' },
        rules: [
          { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
          { apiGroups: ['agentcard.dev'], resources: ['agentcards', 'agentcards/status'], verbs: ['*'] },
          { apiGroups: [''], resources: ['configmaps', 'secrets'], verbs: ['get', 'list', 'watch', 'patch'] },
          { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create'] },
        ],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns.name,
      body: {
        metadata: { name: 'no-pods' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'no-pods' },
        subjects: [{ kind: 'ServiceAccount', name: 'no-pods', namespace: ns.name }],
      },
    });
    // The caches' access check (a LIST of Pods, answered 403 at once) and the election (a GET
    // and a create of the Lease) start together, so left alone the 403 usually ends the process
    // before it ever holds the Lease, and there is nothing to release. The relay keeps that one
    // LIST back until the operator holds the Lease; the API server still answers it, as this
    // ServiceAccount.
    relay = await ApiRelay.start(kc.getCurrentCluster()!.server, join(dirname(kubeconfigPath()), 'pki'));
    const dir = mkdtempSync(join(tmpdir(), 'leader-startup-'));
    const kubeconfig = join(dir, 'kubeconfig');
    relay.writeKubeconfig(saveKubeConfig(await serviceAccountKubeConfig(ns.name, 'no-pods')), kubeconfig);
    const podsList = relay.hold((r) => r.method === 'GET' && r.path === `/api/v1/namespaces/${ns.name}/pods`);

    // Every state of the Lease from before the process starts: who held it, at which version.
    const id = 'startup-failure';
    leaseWatch = await watchLease(ns.name, id);
    const op = spawnOperator(
      ns.name,
      [
        '--leader-elect',
        '--leader-election-namespace',
        ns.name,
        '--leader-election-id',
        id,
        '--no-probes',
        '--no-catalogs',
      ],
      { kubeconfig, env: { POD_NAME: 'denied' } },
    );
    procs.push(op);
    let exitedAt = 0;
    const exited = op.exited.then((code) => {
      exitedAt = Date.now();
      return code;
    });

    // (1) It holds the Lease while its caches cannot start yet.
    await podsList.first;
    const held = await waitFor('the operator to hold the Lease', async () =>
      leaseWatch!.states().find((s) => s.holder.startsWith('denied_')),
    );
    expect(op.child.exitCode).toBeNull();
    expect(String((await op.waitForLog('became leader')).identity)).toBe(held.holder);
    expect(held.leaseDurationSeconds).toBe(15); // the default: a standby would wait 15 s for expiry

    // A second candidate sees the Lease held (its lease-duration clock starts now) and campaigns.
    const standby = new LeaderElector(kubeLeaseStore(new KubeClient(kc), ns.name, id), 'standby', quiet, {
      ...DEFAULT_TIMING,
      retryPeriodMs: 300,
    });
    // Taken before its read: without a release it cannot lead before sawHeldAt + lease duration.
    const sawHeldAt = Date.now();
    expect(await standby.tryAcquireOrRenew()).toBe(false);
    expect(standby.holder).toBe(held.holder);
    const standbyLeads = standby.acquire(stopStandby.signal).then((ok) => ({ ok, at: Date.now() }));

    // The API server now answers the LIST: 403. The operator exits 1 with the reason, once.
    podsList.release();
    const code = await Promise.race([
      exited,
      new Promise<'running'>((r) => setTimeout(() => r('running'), 30_000)),
    ]);
    expect(code).toBe(1);
    const errors = op.lines.filter((l) => l.includes('"level":"error"'));
    expect(errors).toHaveLength(1);
    const reason = JSON.parse(errors[0]!) as { msg: string; runnable: string; error: string };
    expect(reason.msg).toBe('the operator could not start; exiting');
    expect(reason.runnable).toBe('caches');
    expect(reason.error).toMatch(/^cannot list pods in namespace .*: HTTP 403: pods is forbidden/);
    expect(op.lines.some((l) => l.includes('"msg":"caches synced; reconciling"'))).toBe(false);

    // (2) It released the Lease before it exited: the write client-go's release makes (holder
    // emptied, lease duration 1 s, renew time now), so the standby took over at once rather than
    // 15 s after it saw the Lease held.
    const taken = await standbyLeads;
    expect(taken.ok).toBe(true);
    console.info(
      `start failure: standby took the Lease ${taken.at - exitedAt} ms after the exit, ${taken.at - sawHeldAt} ms after it saw it held`,
    );
    expect(taken.at - sawHeldAt).toBeLessThan(15_000);
    await waitFor('the Lease history to show the standby', async () =>
      leaseWatch!.states().some((s) => s.holder === 'standby'),
    );
    const history = leaseWatch.states();
    const seen = JSON.stringify(history);
    // The operator created the Lease (it did not exist before), then every change in order: its
    // renewals (if any), its release, the standby taking over.
    expect(
      history.map((s) => s.type),
      seen,
    ).toEqual(['ADDED', ...history.slice(1).map(() => 'MODIFIED')]);
    expect(new Set(history.map((s) => s.resourceVersion)).size, seen).toBe(history.length);
    const holders = history.map((s) => s.holder).filter((h, i, all) => i === 0 || h !== all[i - 1]);
    expect(holders, seen).toEqual([held.holder, '', 'standby']);
    const release = history.find((s) => s.holder === '')!;
    expect(release.leaseDurationSeconds).toBe(1);
    expect(release.renewTime).not.toBe(history.findLast((s) => s.holder === held.holder)!.renewTime);
    expect(Date.parse(release.renewTime)).toBeLessThanOrEqual(exitedAt);
    expect(op.lines.some((l) => l.includes('"msg":"released the leader lease"'))).toBe(true);
  });
});

interface LeaseState {
  type: string;
  resourceVersion: string;
  holder: string;
  leaseDurationSeconds: number | undefined;
  renewTime: string;
}

interface LeaseHistory {
  /** Every state seen so far, in order; throws if the watch ended early. */
  states(): LeaseState[];
  stop(): void;
}

/** Watches one Lease (from before it exists) and records each of its states. */
async function watchLease(namespace: string, name: string): Promise<LeaseHistory> {
  const fieldSelector = `metadata.name=${name}`;
  const list = await leases.listNamespacedLease({ namespace, fieldSelector });
  const seen: LeaseState[] = [];
  let ended: string | undefined;
  let stopping = false;
  const watch = new Watch(kc);
  const controller = await watch.watch(
    `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
    { resourceVersion: list.metadata?.resourceVersion, fieldSelector, allowWatchBookmarks: false },
    (type: string, lease: V1Lease) => {
      // MicroTime arrives as text; the client types it as a Date.
      const renewTime = lease.spec?.renewTime as unknown;
      seen.push({
        type,
        resourceVersion: lease.metadata?.resourceVersion ?? '',
        holder: lease.spec?.holderIdentity ?? '',
        leaseDurationSeconds: lease.spec?.leaseDurationSeconds,
        renewTime: renewTime instanceof Date ? renewTime.toISOString() : String(renewTime ?? ''),
      });
    },
    (err: unknown) => {
      if (!stopping) ended = err instanceof Error ? err.message : 'the watch ended';
    },
  );
  return {
    states: () => {
      if (ended) throw new Error(`the watch on Lease ${name} ended early (${ended})`);
      return [...seen];
    },
    stop: () => {
      stopping = true;
      controller.abort();
    },
  };
}
