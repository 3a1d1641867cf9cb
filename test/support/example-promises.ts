/**
 * The promise in the first line of each file of examples/, in one of two forms:
 *
 *   # Reaches <Condition>=True[ after: <command>[; <command> ...]]
 *   # Needs: <what the cluster must have, in words>
 *
 * "Reaches" means: on a plain cluster with the operator installed, run the commands in order, then
 * `kubectl apply -f <the file>`, and every object of the file that has that condition type
 * (Ready: the AgentCards; Available: the Deployments) reaches it. "Needs" names what a plain
 * cluster lacks. test/unit/docs/examples.test.ts checks every file has one;
 * test/integration/examples.test.ts applies each file and checks it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export type ExamplePromise =
  | { file: string; kind: 'reaches'; condition: string; after: string[] }
  | { file: string; kind: 'needs'; needs: string };

/** The object kinds whose status carries each promised condition. */
export const CONDITION_KINDS: Record<string, string[]> = {
  Ready: ['AgentCard'],
  Available: ['Deployment'],
};

const REACHES = /^# Reaches ([A-Za-z]+)=True(?: after: (.+))?$/;
const NEEDS = /^# Needs: (\S.*)$/;

/** Parses one file's first line; throws naming the file when it is neither form. */
export function parsePromise(file: string, text: string): ExamplePromise {
  const first = text.split('\n', 1)[0]!.trimEnd();
  const reaches = REACHES.exec(first);
  if (reaches) {
    const condition = reaches[1]!;
    if (!CONDITION_KINDS[condition])
      throw new Error(
        `${file}: first line promises ${condition}=True; known: ${Object.keys(CONDITION_KINDS).join(', ')}`,
      );
    const after = (reaches[2] ?? '')
      .split('; ')
      .map((c) => c.trim())
      .filter(Boolean);
    return { file, kind: 'reaches', condition, after };
  }
  const needs = NEEDS.exec(first);
  if (needs) return { file, kind: 'needs', needs: needs[1]! };
  throw new Error(
    `${file}: the first line must be "# Reaches <Condition>=True[ after: <command>; ...]" or "# Needs: ...", got ${JSON.stringify(first.slice(0, 80))}`,
  );
}

/**
 * Every .yaml file under `dir`, as paths relative to `root` (e.g. examples/x.yaml), sorted. The
 * GitOps manifests (examples/gitops/) install the operator itself rather than use it; their own
 * tests (test/unit/helm/gitops.test.ts, test/integration/gitops-examples.test.ts) check them.
 */
export function exampleFiles(root: string, dir = join(root, 'examples')): string[] {
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => /\.ya?ml$/.test(f) && !f.startsWith('gitops/'))
    .map((f) => relative(root, join(dir, f)))
    .sort();
}

export function readPromises(root: string): ExamplePromise[] {
  return exampleFiles(root).map((file) => parsePromise(file, readFileSync(join(root, file), 'utf8')));
}

/** The example files a command applies (`kubectl apply -f examples/...`). */
export function appliedFiles(command: string): string[] {
  return [...command.matchAll(/kubectl apply (?:[^|;]*?\s)?-f (examples\/\S+\.ya?ml)/g)].map((m) => m[1]!);
}
