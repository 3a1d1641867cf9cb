/** Card files and a kubelet-style ConfigMap volume layout for the sidecar tests. */
import { mkdir, mkdtemp, readdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { maxAgeDigitKeys } from '../../operator/sidecar/max-age-keys.ts';
import { MAX_AGE_FILE, MAX_AGE_LIMIT } from '../../operator/sidecar/version.ts';

export function cardJson(version = '1.0.0', name = 'weather-agent'): string {
  return JSON.stringify({
    name,
    description: 'Forecasts for a city',
    version,
    supportedInterfaces: [
      { url: 'https://weather.example.com/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ],
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'forecast', name: 'Forecast', description: 'Weather forecast', tags: ['weather'] }],
  });
}

export function legacyJson(version = '1.0.0'): string {
  return JSON.stringify({
    name: 'weather-agent',
    description: 'Forecasts for a city',
    version,
    url: 'https://weather.example.com/a2a',
    preferredTransport: 'JSONRPC',
    protocolVersion: '0.3.0',
  });
}

export const JWKS = JSON.stringify({
  keys: [
    {
      kty: 'OKP',
      crv: 'Ed25519',
      x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo',
      kid: 'k1',
      alg: 'EdDSA',
      use: 'sig',
    },
  ],
});

export function cardFiles(version = '1.0.0', maxAge = '120'): Record<string, string> {
  return {
    'agent-card.json': cardJson(version),
    'agent.json': legacyJson(version),
    'jwks.json': JWKS,
    'cache-max-age-seconds': maxAge,
  };
}

export async function tempDir(prefix = 'agentcard-sidecar-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

let counter = 0;

/**
 * A card ConfigMap's data as the controller publishes it (operator/controllers/agentcard/
 * configmap.ts): with the max-age digit keys of its `cache-max-age-seconds`, when that is valid.
 */
export function publishedData(files: Record<string, string>): Record<string, string> {
  const text = files[MAX_AGE_FILE];
  if (text === undefined || !/^\d{1,6}$/.test(text) || Number(text) > MAX_AGE_LIMIT) return files;
  return { ...files, ...maxAgeDigitKeys(Number(text)) };
}

/**
 * Lays out one version of a ConfigMap volume as the kubelet's atomic writer does: files in a
 * fresh `..<timestamp>` directory, a `..data_tmp` symlink to it renamed over `..data`, visible
 * files as symlinks into `..data`, and the previous timestamped directory removed.
 */
export async function kubeletWrite(dir: string, files: Record<string, string>): Promise<void> {
  const stamp = `..2026_11_30_00_00_00.${process.pid}${++counter}`;
  await mkdir(join(dir, stamp));
  for (const [name, content] of Object.entries(files)) await writeFile(join(dir, stamp, name), content);
  const entries = await readdir(dir);
  const old = entries.filter((e) => e.startsWith('..2026') && e !== stamp);
  await symlink(stamp, join(dir, '..data_tmp'));
  await rename(join(dir, '..data_tmp'), join(dir, '..data'));
  for (const name of Object.keys(files)) {
    if (!entries.includes(name)) await symlink(join('..data', name), join(dir, name));
  }
  for (const o of old) await rm(join(dir, o), { recursive: true, force: true });
}
