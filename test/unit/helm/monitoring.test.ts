/**
 * The chart's alerts and dashboard: every PromQL expression parses (Prometheus' own grammar),
 * and every agentcard_*, workqueue_* and controller_runtime_* metric they use is one the operator
 * registers, so an alert can never silently watch a metric nobody emits. The last two are names
 * other operators export too, so every use of them selects this operator's controllers.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parser } from '@prometheus-io/lezer-promql';
import { render, type K8sObject } from './chart.ts';
import { repoRoot } from '../../support/paths.ts';

type Rule = { alert: string; expr: string };

const rendered = await render({
  metrics: { prometheusRule: { enabled: true }, dashboard: { enabled: true } },
});
const alerts = (
  rendered.one('PrometheusRule') as K8sObject & { spec: { groups: { rules: Rule[] }[] } }
).spec.groups.flatMap((g) => g.rules);
const dashboard = JSON.parse(
  (rendered.one('ConfigMap') as K8sObject & { data: Record<string, string> }).data[
    'agentcard-operator.json'
  ]!,
) as { panels: { title: string; targets: { expr: string }[] }[] };

const expressions: [string, string][] = [
  ...alerts.map((r): [string, string] => [`alert ${r.alert}`, r.expr]),
  ...dashboard.panels.flatMap((p) => p.targets.map((t): [string, string] => [`panel "${p.title}"`, t.expr])),
];

/** Metrics the alerts may use before the operator registers them: none now; the test below keeps it so. */
const PENDING: string[] = [];

/** Grafana replaces its variables before Prometheus sees the query. */
const asPrometheusSees = (expr: string) => expr.replaceAll('$__rate_interval', '5m');

function syntaxErrors(expr: string): string[] {
  const errors: string[] = [];
  parser.parse(expr).iterate({
    enter: (node) => {
      if (node.type.isError)
        errors.push(`at ${node.from}: "${expr.slice(Math.max(0, node.from - 10), node.to + 10)}"`);
    },
  });
  return errors;
}

/** This operator's metric names: its own, and client-go's and controller-runtime's. */
const OURS = /\b(?:agentcard|workqueue|controller_runtime)_[a-z0-9_]+/g;

/** Metric names registered anywhere in operator/ (prom-client `name: 'agentcard_...'`). */
function registeredMetrics(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) {
        for (const m of readFileSync(path, 'utf8').matchAll(
          /name:\s*['"`]((?:agentcard|workqueue|controller_runtime)_[a-z0-9_]+)['"`]/g,
        ))
          names.add(m[1]!);
      }
    }
  };
  walk(join(repoRoot, 'operator'));
  return names;
}

describe('monitoring expressions', () => {
  it('the parser rejects broken PromQL (the check below can fail)', () => {
    expect(syntaxErrors('sum(rate(agentcard_reconcile_total[5m]) >')).not.toEqual([]);
  });

  for (const [where, expr] of expressions) {
    it(`${where} is valid PromQL`, () => {
      expect(syntaxErrors(asPrometheusSees(expr))).toEqual([]);
    });
  }

  it('uses only metrics the operator registers (but for those still pending)', () => {
    const registered = registeredMetrics();
    const missing = [...usedMetrics()].filter((name) => !registered.has(name) && !PENDING.includes(name));
    expect(missing.sort()).toEqual([]);
  });

  it("selects this operator's controllers wherever it reads a workqueue_* or controller_runtime_* series", () => {
    const unscoped = expressions.flatMap(([where, expr]) =>
      [...expr.matchAll(/\b(?:workqueue|controller_runtime)_[a-z0-9_]+(\{[^}]*\})?/g)]
        .filter((m) => !/(?:controller|name)=~"agentcard\|agentcatalog"/.test(m[1] ?? ''))
        .map((m) => `${where}: ${m[0]}`),
    );
    expect(unscoped).toEqual([]);
    expect(expressions.some(([, expr]) => expr.includes('workqueue_queue_duration_seconds_bucket'))).toBe(
      true,
    );
  });

  it('lists as pending only metrics that are still not registered (remove them once they are)', () => {
    const registered = registeredMetrics();
    expect(PENDING.filter((name) => registered.has(name))).toEqual([]);
    for (const name of PENDING) expect(usedMetrics().has(name), name).toBe(true);
  });
});

function usedMetrics(): Set<string> {
  return new Set(
    expressions.flatMap(([, expr]) =>
      [...expr.matchAll(OURS)].map((m) => m[0].replace(/_(bucket|sum|count)$/, '')),
    ),
  );
}
