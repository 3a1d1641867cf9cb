/**
 * The release version: package.json's `version`, the one source of the chart's version, the image
 * tag and label (build/version.ts keeps those copies). Imported, not read at run time: the
 * bundle (build/bundle.ts) carries it, so `agentcard --version` is right wherever it runs.
 */
import pkg from '../package.json' with { type: 'json' };

export const VERSION: string = pkg.version;
