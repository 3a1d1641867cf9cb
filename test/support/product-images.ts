// The project's images in the node (assembled and imported by the node project's global setup,
// test/node/product-images.ts), as the chart's values name them.
import { join } from 'node:path';
import { execInNode, type NodeClusterState } from '../node/control.ts';
import type { BuiltImage } from '../node/product-images.ts';

export interface ProductImages {
  /** The operator image's reference (repository:tag), which the examples name too. */
  operator: string;
  operatorRepository: string;
  operatorTag: string;
  /** nginx with njs, by digest: the chart accepts `sidecar.nginx.image` pinned by digest only. */
  nginx: string;
}

/**
 * The images, with nginx also known to containerd by `repository@digest`: an imported image is
 * recorded under the name it was imported with only, and the kubelet resolves a digest reference
 * (with `imagePullPolicy: Never`, or IfNotPresent with no registry) by that exact name.
 */
export async function productImages(state: NodeClusterState, built: BuiltImage[]): Promise<ProductImages> {
  const [operator, nginx] = built;
  if (!operator || !nginx) throw new Error('the global setup provided no operator or nginx image');
  const repo = (name: string) => name.slice(0, name.lastIndexOf(':'));
  const pinned = `${repo(nginx.name)}@${nginx.digest}`;
  const ctr = (...args: string[]) =>
    execInNode(state, join(state.nodeBinDir, 'ctr'), [
      '--address=/run/containerd/containerd.sock',
      '--namespace=k8s.io',
      ...args,
    ]);
  if (!(await ctr('images', 'ls', '-q')).split('\n').includes(pinned)) {
    await ctr('images', 'tag', nginx.name, pinned);
  }
  return {
    operator: operator.name,
    operatorRepository: repo(operator.name),
    operatorTag: operator.name.slice(operator.name.lastIndexOf(':') + 1),
    nginx: pinned,
  };
}
