/**
 * Whether V8 keeps an object in its fast (shaped) form, or has turned it into a dictionary
 * object: larger and slower, what a `delete` on a parsed object does. For tests of the caches'
 * trims, which must replace what they drop rather than delete it.
 */
import { setFlagsFromString } from 'node:v8';

let hasFastPropertiesOf: ((obj: object) => boolean) | undefined;

export function isFastObject(obj: object): boolean {
  if (!hasFastPropertiesOf) {
    // V8's own test intrinsic; the flag only has to be on when the function is compiled.
    setFlagsFromString('--allow-natives-syntax');
    hasFastPropertiesOf = new Function('obj', 'return %HasFastProperties(obj)') as (obj: object) => boolean;
    setFlagsFromString('--no-allow-natives-syntax');
  }
  return hasFastPropertiesOf(obj);
}
