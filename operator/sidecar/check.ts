/**
 * Checks that the files of a published ConfigMap are what the sidecar may serve. Deliberately
 * small: the controller has already validated and signed the card against the full schema
 * before publishing it, so the sidecar only guards against a truncated, hand-edited or wrong
 * ConfigMap (it must never swap a working card for garbage).
 *
 * The full strict schema (../card/schema.ts, zod) is deliberately not used here: loading it
 * adds about 15 MiB of resident memory (measured on Node 24 with a warm compile cache) to a
 * process that runs in every agent Pod, and the controller has already validated the card with
 * it before publishing.
 */

/** Returns the problem with a parsed `agent-card.json`, or undefined when it is a v1.0 AgentCard. */
export function checkAgentCard(card: unknown): string | undefined {
  // Required fields of the A2A 1.0 AgentCard message (name, description, version,
  // supportedInterfaces, capabilities, defaultInputModes, defaultOutputModes, skills).
  if (!isObject(card)) return 'agent-card.json is not a JSON object';
  for (const field of ['name', 'description', 'version'] as const) {
    if (typeof card[field] !== 'string') return `agent-card.json: '${field}' must be a string`;
  }
  if ((card.name as string).trim() === '') return "agent-card.json: 'name' is empty";
  const interfaces = card.supportedInterfaces;
  if (!Array.isArray(interfaces) || interfaces.length === 0) {
    return "agent-card.json: 'supportedInterfaces' must be a non-empty list";
  }
  for (const [i, iface] of interfaces.entries()) {
    if (!isObject(iface)) return `agent-card.json: supportedInterfaces[${i}] is not an object`;
    for (const field of ['url', 'protocolBinding', 'protocolVersion'] as const) {
      if (typeof iface[field] !== 'string' || iface[field] === '') {
        return `agent-card.json: supportedInterfaces[${i}].${field} must be a non-empty string`;
      }
    }
  }
  if (!isObject(card.capabilities)) return "agent-card.json: 'capabilities' must be an object";
  for (const field of ['defaultInputModes', 'defaultOutputModes', 'skills'] as const) {
    if (!Array.isArray(card[field])) return `agent-card.json: '${field}' must be a list`;
  }
  if (card.signatures !== undefined && !Array.isArray(card.signatures)) {
    return "agent-card.json: 'signatures' must be a list";
  }
  return undefined;
}

/** The v0.3-shaped card (`agent.json`): an object with a name and a top-level url (A2A 0.3 AgentCard). */
export function checkLegacyCard(card: unknown): string | undefined {
  if (!isObject(card)) return 'agent.json is not a JSON object';
  if (typeof card.name !== 'string' || card.name === '')
    return "agent.json: 'name' must be a non-empty string";
  if (typeof card.url !== 'string') return "agent.json: 'url' must be a string";
  return undefined;
}

/** A JWK Set (RFC 7517 section 5): an object whose `keys` is a list of objects. */
export function checkJwks(jwks: unknown): string | undefined {
  if (!isObject(jwks) || !Array.isArray(jwks.keys)) return "jwks.json: must be an object with a 'keys' list";
  if (!jwks.keys.every(isObject)) return 'jwks.json: every key must be an object';
  return undefined;
}

/**
 * An AI Catalog (`ai-catalog.json` and its partitions): an object with a "Major.Minor"
 * specVersion and an entries list (AI Catalog spec, "Catalog Object"). The controller validated
 * and signed it; this only refuses a truncated or wrong file.
 */
export function checkCatalog(catalog: unknown): string | undefined {
  if (!isObject(catalog)) return 'ai-catalog.json is not a JSON object';
  if (typeof catalog.specVersion !== 'string' || !/^\d+\.\d+$/.test(catalog.specVersion)) {
    return 'ai-catalog.json: \'specVersion\' must be a "Major.Minor" string';
  }
  if (!Array.isArray(catalog.entries)) return "ai-catalog.json: 'entries' must be a list";
  if (!catalog.entries.every(isObject)) return 'ai-catalog.json: every entry must be an object';
  return undefined;
}

/** The catalog page (`index.html` and its partitions): an HTML document. */
export function checkPage(text: unknown): string | undefined {
  if (typeof text !== 'string' || !/^\s*<!doctype html>/i.test(text))
    return 'index.html is not an HTML document';
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
