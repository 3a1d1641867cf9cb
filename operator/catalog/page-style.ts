/**
 * The catalog page's only style sheet and the Content-Security-Policy that allows exactly it.
 * The page has no script, no image, no font and no external asset, so the policy denies
 * everything (`default-src 'none'`) but this one inline `<style>`, named by its SHA-256 (CSP
 * Level 3, "hash-source"). Kept apart from page.ts so the server can send the header without
 * loading the page builder.
 */
import { createHash } from 'node:crypto';

export const PAGE_STYLE = `
:root{color-scheme:light dark;--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--ok:#1a7f37;--bad:#cf222e;--unk:#6e7781}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--line:#30363d;--ok:#3fb950;--bad:#f85149;--unk:#9198a1}}
body{font:15px/1.5 system-ui,sans-serif;color:var(--fg);max-width:70rem;margin:2rem auto;padding:0 1rem}
h1{font-size:1.5rem;margin:0 0 .25rem}
header p{color:var(--muted);margin:.25rem 0 1.5rem}
ul.agents,ul.nested{list-style:none;padding:0;margin:0}
li.agent{border:1px solid var(--line);border-radius:8px;padding:.75rem 1rem;margin:0 0 .75rem}
li.agent h2{font-size:1.1rem;margin:0}
.version,.ns{color:var(--muted);font-weight:normal;font-size:.9rem;margin-left:.5rem}
.desc{margin:.25rem 0}
.meta{margin:.25rem 0;font-size:.9rem}
.meta b{font-weight:600}
.tag{display:inline-block;border:1px solid var(--line);border-radius:1rem;padding:0 .5rem;margin:0 .25rem .25rem 0;font-size:.8rem}
.badge{font-size:.8rem;font-weight:600;margin-right:.75rem}
.yes{color:var(--ok)}.no{color:var(--bad)}.unknown{color:var(--unk)}
a{color:inherit}
footer{color:var(--muted);font-size:.85rem;margin-top:2rem}
`.trim();

/** The style's hash-source, e.g. `'sha256-...'`. */
export const PAGE_STYLE_HASH = `'sha256-${createHash('sha256').update(PAGE_STYLE, 'utf8').digest('base64')}'`;

/** The policy the page repeats in a meta element, for copies served by something else. */
export const PAGE_META_CSP = `default-src 'none'; style-src ${PAGE_STYLE_HASH}; base-uri 'none'; form-action 'none'`;
/** The policy the page is served with (frame-ancestors only works as a header). */
export const PAGE_CSP = `${PAGE_META_CSP}; frame-ancestors 'none'`;
