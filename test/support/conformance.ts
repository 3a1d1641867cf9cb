/**
 * The A2A 1.0 JSON Schema of the conformance data, compiled with ajv. Its definitions are keyed
 * by spaced titles and refer to each other by file-style names, so each one first gets that
 * name as its `$id`. The schema has no `required` lists: REQUIRED says which fields the
 * specification requires, checked separately by missingRequired().
 */
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { fixturePath } from './paths.ts';

const GOOGLE = new Set(['Struct', 'Timestamp', 'Value']);
const schemaId = (title: string) =>
  GOOGLE.has(title)
    ? `google.protobuf.${title}.jsonschema.json`
    : `lf.a2a.v1.${title.replace(/ /g, '')}.jsonschema.json`;

export function agentCardValidator() {
  const bundle = JSON.parse(readFileSync(fixturePath('conformance/a2a.schema.json'), 'utf8')) as {
    definitions: Record<string, Record<string, unknown>>;
  };
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  for (const [title, definition] of Object.entries(bundle.definitions)) {
    ajv.addSchema({ ...definition, $id: schemaId(title) });
  }
  const validate = ajv.getSchema(schemaId('Agent Card'));
  if (!validate) throw new Error('no Agent Card definition');
  return (card: unknown): string[] =>
    validate(card) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`);
}

/** Fields the specification marks REQUIRED, per message (spec section 4.4). */
const REQUIRED = {
  card: [
    'name',
    'description',
    'supportedInterfaces',
    'version',
    'capabilities',
    'defaultInputModes',
    'defaultOutputModes',
    'skills',
  ],
  interface: ['url', 'protocolBinding', 'protocolVersion'],
  provider: ['url', 'organization'],
  skill: ['id', 'name', 'description', 'tags'],
  apiKey: ['location', 'name'],
  http: ['scheme'],
  oauth2: ['flows'],
  oidc: ['openIdConnectUrl'],
  authorizationCode: ['authorizationUrl', 'tokenUrl', 'scopes'],
  clientCredentials: ['tokenUrl', 'scopes'],
  deviceCode: ['deviceAuthorizationUrl', 'tokenUrl', 'scopes'],
  signature: ['protected', 'signature'],
};

type Obj = Record<string, unknown>;

/** Paths of required fields missing from a rendered v1.0 card. */
export function missingRequired(card: Obj): string[] {
  const missing: string[] = [];
  const need = (obj: unknown, fields: string[], path: string) => {
    for (const f of fields) if (!obj || typeof obj !== 'object' || !(f in obj)) missing.push(`${path}.${f}`);
  };
  need(card, REQUIRED.card, '$');
  ((card.supportedInterfaces as Obj[]) ?? []).forEach((i, n) =>
    need(i, REQUIRED.interface, `$.supportedInterfaces[${n}]`),
  );
  if (card.provider) need(card.provider, REQUIRED.provider, '$.provider');
  ((card.skills as Obj[]) ?? []).forEach((s, n) => need(s, REQUIRED.skill, `$.skills[${n}]`));
  ((card.signatures as Obj[]) ?? []).forEach((s, n) => need(s, REQUIRED.signature, `$.signatures[${n}]`));
  for (const [name, scheme] of Object.entries((card.securitySchemes as Record<string, Obj>) ?? {})) {
    const at = `$.securitySchemes.${name}`;
    if (scheme.apiKeySecurityScheme)
      need(scheme.apiKeySecurityScheme, REQUIRED.apiKey, `${at}.apiKeySecurityScheme`);
    if (scheme.httpAuthSecurityScheme)
      need(scheme.httpAuthSecurityScheme, REQUIRED.http, `${at}.httpAuthSecurityScheme`);
    if (scheme.openIdConnectSecurityScheme)
      need(scheme.openIdConnectSecurityScheme, REQUIRED.oidc, `${at}.openIdConnectSecurityScheme`);
    const oauth = scheme.oauth2SecurityScheme as Obj | undefined;
    if (oauth) {
      need(oauth, REQUIRED.oauth2, `${at}.oauth2SecurityScheme`);
      const flows = (oauth.flows ?? {}) as Obj;
      for (const flow of ['authorizationCode', 'clientCredentials', 'deviceCode'] as const) {
        if (flows[flow]) need(flows[flow], REQUIRED[flow], `${at}.oauth2SecurityScheme.flows.${flow}`);
      }
    }
  }
  return missing;
}
