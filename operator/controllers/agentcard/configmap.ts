/**
 * The published ConfigMap (cross-team contract): `<agentcard-name>-agent-card` in the AgentCard's
 * namespace, owned by it (ownerReference controller=true, so deleting the AgentCard lets the
 * garbage collector delete the ConfigMap: no finalizer needed), labelled for the operator's
 * watch, with the served documents as data. The sidecar reads these files through a volume.
 */
import {
  CARD_LABEL,
  CONFIGMAP_SUFFIX,
  DATA_KEYS,
  configMapName,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  SERVING_CENTRAL,
  SERVING_HOSTS_KEY,
  SERVING_LABEL,
} from '../../api/names.ts';
import type { ConfigMapObject } from '../../runtime/configmaps.ts';
import { maxAgeDigitKeys } from '../../sidecar/max-age-keys.ts';

export interface Owner {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
  uid: string;
}

export interface PublishedFiles {
  /** The signed v1.0 card, exactly the bytes that are served. */
  card: string;
  /** The v0.3-shaped card. */
  legacyCard: string;
  /** `{"keys":[...]}` public JWKs. */
  jwks: string;
  cacheMaxAgeSeconds: number;
  /** The other audiences' cards under their host keys (audiences/publish.ts lays them out). */
  variantData?: Readonly<Record<string, string>>;
  /**
   * Set when the card server serves this card (spec.serving.server Central): the default
   * audience's hosts, lowercase. The ConfigMap then carries SERVING_LABEL and SERVING_HOSTS_KEY.
   */
  centralHosts?: readonly string[];
}

/** A ConfigMap name is a DNS subdomain: at most 253 characters. */
const MAX_NAME = 253;

/** Why the ConfigMap name for this AgentCard cannot exist, or undefined when it can. */
export function configMapNameProblem(cardName: string): string | undefined {
  const name = configMapName(cardName);
  if (name.length > MAX_NAME) {
    return `the ConfigMap name '${name.slice(0, 40)}...' would be ${name.length} characters (the limit is ${MAX_NAME}); shorten the AgentCard name to at most ${MAX_NAME - CONFIGMAP_SUFFIX.length}`;
  }
  return undefined;
}

export function desiredConfigMap(owner: Owner, files: PublishedFiles): ConfigMapObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: configMapName(owner.name),
      namespace: owner.namespace,
      labels: {
        [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
        [CARD_LABEL]: owner.name,
        ...(files.centralHosts ? { [SERVING_LABEL]: SERVING_CENTRAL } : {}),
      },
      ownerReferences: [
        {
          apiVersion: owner.apiVersion,
          kind: owner.kind,
          name: owner.name,
          uid: owner.uid,
          controller: true,
        },
      ],
    },
    data: {
      [DATA_KEYS.card]: files.card,
      [DATA_KEYS.legacyCard]: files.legacyCard,
      [DATA_KEYS.jwks]: files.jwks,
      [DATA_KEYS.maxAge]: String(files.cacheMaxAgeSeconds),
      // The same number spelled for the nginx sidecar, which can test keys but not read them.
      ...maxAgeDigitKeys(files.cacheMaxAgeSeconds),
      ...files.variantData,
      // One host per line, newline-terminated; present (maybe empty) for every central card.
      ...(files.centralHosts
        ? { [SERVING_HOSTS_KEY]: files.centralHosts.map((h) => `${h}\n`).join('') }
        : {}),
    },
  };
}
