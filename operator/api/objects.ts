/** The custom resources as the caches hold them: raw JSON from the API server, spec unparsed. */

export interface AgentCardObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    generation?: number;
    resourceVersion?: string;
    deletionTimestamp?: unknown;
    annotations?: Record<string, string>;
  };
  spec?: unknown;
  status?: unknown;
}
