/**
 * supportedInterfaces compared (pure). An interface is identified by its protocol binding, its
 * URL and the major version of the protocol it speaks: A2A 1.0 section 3.6.2 lets an agent
 * expose one binding at one URL in several versions, each its own entry, and a client picks an
 * entry by binding and then calls its URL (section 8.3.2). What is left unmatched on both sides
 * is paired where it reads as one change in place: the same binding and URL in another major
 * version, or the same binding and version at another URL.
 */
import type { AgentInterface } from '../card/schema.ts';
import { atNew, atOld, quote, type Changes } from './change.ts';

interface Entry {
  index: number;
  iface: AgentInterface;
  major: string;
  /** The minor version, or undefined when protocolVersion is not `major.minor`. */
  minor?: number;
}

/** "1.0" -> major "1", minor 0 (section 3.6: Major.Minor; a patch, if written, is ignored). */
function entry(iface: AgentInterface, index: number): Entry {
  const match = /^(\d+)\.(\d+)/.exec(iface.protocolVersion);
  return match
    ? { index, iface, major: match[1]!, minor: Number(match[2]) }
    : { index, iface, major: iface.protocolVersion };
}

const keyOf = (e: Entry) => JSON.stringify([e.iface.protocolBinding, e.iface.url, e.major]);
const label = (i: AgentInterface) => `${i.protocolBinding} ${i.url}`;

export function compareInterfaces(
  before: readonly AgentInterface[],
  after: readonly AgentInterface[],
  changes: Changes,
): void {
  const olds = before.map(entry);
  const news = after.map(entry);
  const pending = new Map<string, Entry[]>();
  for (const e of news) pending.set(keyOf(e), [...(pending.get(keyOf(e)) ?? []), e]);

  const matched = new Map<number, Entry>(); // old index -> new entry
  const removed: Entry[] = [];
  for (const o of olds) {
    const candidates = pending.get(keyOf(o));
    const n = candidates?.shift();
    if (n) matched.set(o.index, n);
    else removed.push(o);
  }
  let added = [...pending.values()].flat().sort((a, b) => a.index - b.index);

  for (const o of olds) {
    const n = matched.get(o.index);
    if (n) compareInPlace(o, n, changes);
  }

  // Pair what is left: first another major version at the same URL, then another URL.
  const pair = (o: Entry, same: (n: Entry) => boolean): Entry | undefined => {
    const n = added.find((a) => a.iface.protocolBinding === o.iface.protocolBinding && same(a));
    if (n) added = added.filter((a) => a !== n);
    return n;
  };
  const unpaired: Entry[] = [];
  for (const o of removed) {
    const major = pair(o, (n) => n.iface.url === o.iface.url);
    if (major) {
      changes.add(
        'protocol-major-changed',
        atNew('supportedInterfaces', major.index, 'protocolVersion'),
        label(o.iface),
        `${label(o.iface)}: protocol version ${o.iface.protocolVersion} -> ${major.iface.protocolVersion} (another major version: a client of ${o.major}.x cannot call it)`,
        { before: o.iface.protocolVersion, after: major.iface.protocolVersion },
      );
      matched.set(o.index, major);
      continue;
    }
    const moved = pair(o, (n) => n.major === o.major);
    if (moved) {
      changes.add(
        'interface-url-changed',
        atNew('supportedInterfaces', moved.index, 'url'),
        label(o.iface),
        `${o.iface.protocolBinding} interface moved: ${o.iface.url} -> ${moved.iface.url}`,
        { before: o.iface.url, after: moved.iface.url },
      );
      matched.set(o.index, moved);
      continue;
    }
    unpaired.push(o);
  }

  const bindingsAfter = new Set(after.map((i) => i.protocolBinding));
  for (const o of unpaired) {
    const gone = !bindingsAfter.has(o.iface.protocolBinding);
    changes.add(
      gone ? 'binding-removed' : 'interface-removed',
      atOld('supportedInterfaces', o.index),
      label(o.iface),
      gone
        ? `binding ${o.iface.protocolBinding} removed: no interface speaks it any more (was ${o.iface.url})`
        : `interface removed: ${label(o.iface)} (protocol ${o.iface.protocolVersion})`,
    );
  }
  const bindingsBefore = new Set(before.map((i) => i.protocolBinding));
  for (const n of added) {
    const fresh = !bindingsBefore.has(n.iface.protocolBinding);
    changes.add(
      fresh ? 'binding-added' : 'interface-added',
      atNew('supportedInterfaces', n.index),
      label(n.iface),
      fresh
        ? `binding ${n.iface.protocolBinding} added at ${n.iface.url}`
        : `interface added: ${label(n.iface)} (protocol ${n.iface.protocolVersion})`,
    );
  }

  // Section 8.3.1: the first entry is the preferred one; clients take the first they support.
  const first = olds[0] && matched.get(olds[0].index);
  if (first && first.index !== 0 && news[0]) {
    changes.add(
      'preferred-interface-changed',
      atNew('supportedInterfaces', 0),
      label(news[0].iface),
      `preferred interface is now ${label(news[0].iface)} (was ${label(olds[0]!.iface)})`,
    );
  }
}

/** The same interface in both cards: its minor version and tenant. */
function compareInPlace(o: Entry, n: Entry, changes: Changes): void {
  if (o.minor !== undefined && n.minor !== undefined && o.minor !== n.minor) {
    const lowered = n.minor < o.minor;
    changes.add(
      lowered ? 'protocol-minor-lowered' : 'protocol-minor-raised',
      atNew('supportedInterfaces', n.index, 'protocolVersion'),
      label(n.iface),
      lowered
        ? `${label(n.iface)}: protocol version lowered ${o.iface.protocolVersion} -> ${n.iface.protocolVersion} (a client asking for ${o.iface.protocolVersion} gets VersionNotSupportedError)`
        : `${label(n.iface)}: protocol version raised ${o.iface.protocolVersion} -> ${n.iface.protocolVersion}`,
      { before: o.iface.protocolVersion, after: n.iface.protocolVersion },
    );
  }
  if ((o.iface.tenant ?? '') !== (n.iface.tenant ?? '')) {
    changes.add(
      'interface-tenant-changed',
      n.iface.tenant === undefined
        ? atOld('supportedInterfaces', o.index, 'tenant')
        : atNew('supportedInterfaces', n.index, 'tenant'),
      label(n.iface),
      `${label(n.iface)}: tenant ${quote(o.iface.tenant)} -> ${quote(n.iface.tenant)} (clients send the tenant in every request)`,
      {
        ...(o.iface.tenant !== undefined ? { before: o.iface.tenant } : {}),
        ...(n.iface.tenant !== undefined ? { after: n.iface.tenant } : {}),
      },
    );
  }
}
