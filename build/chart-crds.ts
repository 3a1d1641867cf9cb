/**
 * The chart's CRD templates, generated from the CRDs in crds/ (`npm run gen:crd` writes both).
 *
 * The CRDs are chart templates rather than files in the chart's crds/ directory, the way
 * cert-manager ships its own: Helm never upgrades nor deletes what crds/ holds, so a new field
 * would never reach a cluster through `helm upgrade` (nor through Argo CD or Flux, which render
 * the chart the same way). As templates they are installed and upgraded with the release, and
 * two values say what happens on uninstall (values.yaml, `crds`):
 * - `crds.enabled` (default true): render them at all; false when they are managed elsewhere
 *   (another release of the chart, `kubectl apply -f crds/`);
 * - `crds.keep` (default true): `helm.sh/resource-policy: keep`, so `helm uninstall` leaves
 *   them, and with them every AgentCard and catalog, in place; and Argo CD's
 *   `Prune=false,Delete=false`, so neither a prune nor deleting the Application deletes them.
 */
import { CRD_FILE } from '../operator/card/crd.ts';
import { CATALOG_CRD_FILE, CLUSTER_CATALOG_CRD_FILE } from '../operator/catalog/crd.ts';
import { CLUSTER_POLICY_CRD_FILE, POLICY_CRD_FILE } from '../operator/policy/crd.ts';
import { IMPORT_CRD_FILE } from '../operator/federation/crd.ts';

/** The chart folder holding the CRD templates. */
export const CHART_CRD_DIR = 'helm/agentcard-operator/templates/crds';

/** Each generated CRD file (crds/...) and the chart template made from it. */
export const CHART_CRDS = [
  CRD_FILE,
  CATALOG_CRD_FILE,
  CLUSTER_CATALOG_CRD_FILE,
  POLICY_CRD_FILE,
  CLUSTER_POLICY_CRD_FILE,
  IMPORT_CRD_FILE,
].map((file) => ({
  file,
  template: `${CHART_CRD_DIR}/${file.slice(file.lastIndexOf('/') + 1)}`,
}));

/**
 * The names of the chart's CRDs (`<plural>.<group>`), read from their generated file names
 * (`crds/<group>_<plural>.yaml`): what a clean-up deletes to leave no CRD behind.
 */
export const CHART_CRD_NAMES = CHART_CRDS.map(({ file }) => {
  const [group, plural] = file.slice(file.lastIndexOf('/') + 1, -'.yaml'.length).split('_');
  return `${plural}.${group}`;
});

const METADATA = /^metadata:\n {2}name: ([a-z0-9.-]+)\n/m;

/**
 * The chart template of one generated CRD: the same document inside `crds.enabled`, with the
 * chart's labels and, when `crds.keep`, the annotations that keep it. Throws when the CRD text
 * does not have the shape gen:crd writes (a top-level `metadata:` holding only `name:`), or holds
 * template delimiters (it is copied verbatim into a template).
 */
export function chartCrdTemplate(crdText: string): string {
  if (crdText.includes('{{') || crdText.includes('}}')) {
    throw new Error('a generated CRD holds "{{" or "}}", which Helm would read as a template action');
  }
  const match = METADATA.exec(crdText);
  if (!match) throw new Error('a generated CRD has no top-level "metadata:" with "name:" first');
  const metadata = [
    'metadata:',
    `  name: ${match[1]}`,
    '  labels:',
    '    {{- include "agentcard.labels" . | nindent 4 }}',
    '  {{- if .Values.crds.keep }}',
    '  annotations:',
    '    # `helm uninstall` leaves the CRD, and with it every AgentCard, in place.',
    '    helm.sh/resource-policy: keep',
    '    # Neither an Argo CD prune nor deleting the Application deletes it.',
    '    argocd.argoproj.io/sync-options: Prune=false,Delete=false',
    '  {{- end }}',
    '',
  ].join('\n');
  const body = crdText.replace(METADATA, () => metadata);
  return `{{- if .Values.crds.enabled }}\n${body}${body.endsWith('\n') ? '' : '\n'}{{- end }}\n`;
}
