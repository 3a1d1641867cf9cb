/**
 * The serving conformance suite (test/support/serving-conformance.ts) for the sidecar's two
 * serving modes: Node's sidecar and the operator-configured nginx. The central card server runs
 * the same suite in test/integration/card-server-conformance.test.ts.
 */
import { SERVING_MODES, sidecarTarget } from '../../support/card-servers.ts';
import { describeServingConformance } from '../../support/serving-conformance.ts';

describeServingConformance(SERVING_MODES.map((mode) => sidecarTarget(mode)));
