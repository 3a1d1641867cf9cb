/**
 * The build-time alias that keeps @kubernetes/client-node's generated code out of the bundle.
 *
 * `@kubernetes/client-node/dist/config.js` (KubeConfig, all the operator uses of the package)
 * imports two bindings, createConfiguration and ServerConfiguration, from the package's generated
 * barrel `./gen/index.js`. Through the barrel the bundle would keep about 1,100 generated model
 * classes (their static fields count as side effects, so esbuild cannot drop them), which the
 * operator never calls: about 580 KB of JavaScript to parse and initialise at every start. This
 * esbuild plugin answers that one import, and only when config.js makes it, with a module that
 * re-exports the same two bindings from the files that define them, so config.js gets the
 * identical objects. Any other importer of the barrel still gets all of it.
 *
 * An upgrade that breaks the alias fails the build: if config.js stops importing the barrel the
 * plugin reports it, and if it imports another binding from it esbuild reports the missing export.
 * test/unit/kube/client-node.test.ts checks the same against the installed package.
 */
import type { Plugin } from 'esbuild';

export const CONFIG_MODULE_SUFFIX = '/@kubernetes/client-node/dist/config.js';
export const BARREL_SPECIFIER = './gen/index.js';

/** What config.js imports from the barrel, and the module of the package that defines each. */
export const BARREL_BINDINGS: Record<string, string> = {
  createConfiguration: '@kubernetes/client-node/dist/gen/configuration.js',
  ServerConfiguration: '@kubernetes/client-node/dist/gen/servers.js',
};

const NAMESPACE = 'client-node-alias';

export function clientNodeAlias(): Plugin {
  return {
    name: 'client-node-alias',
    setup(build) {
      let aliased = false;
      let configSeen = false;
      build.onResolve({ filter: /^\.\/gen\/index\.js$/ }, (args) => {
        if (!args.importer.replaceAll('\\', '/').endsWith(CONFIG_MODULE_SUFFIX)) return undefined;
        aliased = true;
        return { path: 'config-deps', namespace: NAMESPACE, pluginData: { resolveDir: args.resolveDir } };
      });
      build.onLoad({ filter: /.*/, namespace: NAMESPACE }, (args) => ({
        contents: Object.entries(BARREL_BINDINGS)
          .map(([name, from]) => `export { ${name} } from ${JSON.stringify(from)};`)
          .join('\n'),
        loader: 'js',
        resolveDir: (args.pluginData as { resolveDir: string }).resolveDir,
      }));
      build.onLoad({ filter: /[\\/]@kubernetes[\\/]client-node[\\/]dist[\\/]config\.js$/ }, () => {
        configSeen = true;
        return undefined;
      });
      build.onEnd((result) => {
        if (configSeen && !aliased) {
          result.errors.push({
            id: 'client-node-alias',
            pluginName: 'client-node-alias',
            text: `${CONFIG_MODULE_SUFFIX.slice(1)} no longer imports ${BARREL_SPECIFIER}: review build/client-node-alias.ts for this client-node version`,
            location: null,
            notes: [],
            detail: undefined,
          });
        }
      });
    },
  };
}
