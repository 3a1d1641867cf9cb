/**
 * Lets the operator load client-node's KubeConfig without its generated API clients.
 *
 * `@kubernetes/client-node/dist/config.js` (KubeConfig) imports two bindings, createConfiguration
 * and ServerConfiguration, from the package's generated barrel `dist/gen/index.js`; evaluating
 * that barrel loads every generated model and API class: 24 MB of JavaScript and about 33 MiB of
 * resident memory (measured on Node.js 24), none of which the operator calls (its requests go
 * through kube/client.ts). This resolve hook answers that one import, and only when config.js
 * makes it, with client-node-config-deps.ts, which re-exports the same two bindings from the
 * files that define them: config.js gets the identical objects. Any other importer of the barrel
 * still gets all of it. test/unit/kube/slim-load.test.ts fails if config.js starts importing
 * anything else from the barrel.
 *
 * Must run before the first import of kube/config.ts (operator/cli/commands/operator.ts).
 */
import { registerHooks } from 'node:module';

export const CONFIG_MODULE_SUFFIX = '/@kubernetes/client-node/dist/config.js';
export const BARREL_SPECIFIER = './gen/index.js';
export const CONFIG_DEPS_URL = new URL('./client-node-config-deps.ts', import.meta.url).href;

let registered = false;

export function loadKubeConfigWithoutGeneratedApis(): void {
  if (registered) return;
  registered = true;
  registerHooks({
    resolve(specifier, context, nextResolve) {
      if (specifier === BARREL_SPECIFIER && context.parentURL?.endsWith(CONFIG_MODULE_SUFFIX)) {
        return { url: CONFIG_DEPS_URL, format: 'module-typescript', shortCircuit: true };
      }
      return nextResolve(specifier, context);
    },
  });
}
