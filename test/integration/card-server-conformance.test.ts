/**
 * The serving conformance suite (test/support/serving-conformance.ts), the sidecar's, run against
 * the central card server: the real `agentcard card-server` process serving a ConfigMap published
 * on the real API server (test/support/card-server-targets.ts). The one difference by design: a
 * Host no card claims gets 404 from the card server, the default card from a sidecar.
 */
import { cardServerTarget } from '../support/card-server-targets.ts';
import { describeServingConformance } from '../support/serving-conformance.ts';

describeServingConformance([cardServerTarget()]);
