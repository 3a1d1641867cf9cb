// The project's images in the node (assembled and imported, under their tag and their digest
// reference, by the node project's global setup: test/node/product-images.ts), as the chart's
// values name them.
import { digestReference, type BuiltImage } from '../node/product-images.ts';

export interface ProductImages {
  /** The operator image's reference (repository:tag), which the examples name too. */
  operator: string;
  operatorRepository: string;
  operatorTag: string;
  /** nginx with njs, by digest: the chart accepts `sidecar.nginx.image` pinned by digest only. */
  nginx: string;
}

export function productImages(built: BuiltImage[]): ProductImages {
  const [operator, nginx] = built;
  if (!operator || !nginx) throw new Error('the global setup provided no operator or nginx image');
  const colon = operator.name.lastIndexOf(':');
  return {
    operator: operator.name,
    operatorRepository: operator.name.slice(0, colon),
    operatorTag: operator.name.slice(colon + 1),
    nginx: digestReference(nginx),
  };
}
