/** Work-queue keys: `namespace/name`, the same form client-go's cache uses. */

export function objectKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export function splitKey(key: string): [namespace: string, name: string] {
  const i = key.indexOf('/');
  return [key.slice(0, i), key.slice(i + 1)];
}
