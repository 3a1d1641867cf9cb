// What @kubernetes/client-node's dist/config.js imports from its generated barrel (gen/index.js),
// taken from the files that define it. See slim-load.ts.
export { createConfiguration } from '@kubernetes/client-node/dist/gen/configuration.js';
export { ServerConfiguration } from '@kubernetes/client-node/dist/gen/servers.js';
