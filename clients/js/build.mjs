#!/usr/bin/env node
// Writes the tracker's two front doors from one source, src/core.js:
//
//   web/tracker.js  (repository root)  src/script.js with the core: served by the binary
//                                       as GET /tracker.js (include_str!, so no Node.js is
//                                       needed to build or run the server)
//   clients/js/index.js                src/module.js with the core: the package's ES module
//
// Both are committed. `node build.mjs --check` writes nothing and exits 1 when either
// differs from what this script makes; the browser tests (tests/browser/) and `npm pack`
// (prepack) run it, so an edit of only one side fails. No dependencies.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const MARKER = /^\/\* @core \*\/\n/m;

// A source without its leading `//` lines (notes for maintainers, not copied).
const source = (file) => readFileSync(path.join(here, 'src', file), 'utf8').replace(/^(\/\/.*\n)+/, '');

const core = source('core.js');

// The template with its marker line replaced by the core. Not indented: in the served
// script, indentation costs bytes.
function fill(template) {
  const text = source(template);
  if (!MARKER.test(text)) throw new Error(`src/${template}: no /* @core */ line`);
  return text.replace(MARKER, () => core);
}

export const outputs = {
  [path.join(here, '..', '..', 'web', 'tracker.js')]: fill('script.js'),
  [path.join(here, 'index.js')]: fill('module.js'),
};

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const [file, text] of Object.entries(outputs)) {
    const name = path.relative(path.join(here, '..', '..'), file);
    let current = null;
    try { current = readFileSync(file, 'utf8'); } catch {}
    if (current === text) continue;
    if (check) {
      console.error(`${name} is not what clients/js/build.mjs makes from clients/js/src/: run \`node clients/js/build.mjs\``);
      stale++;
    } else {
      writeFileSync(file, text);
      console.log(`wrote ${name}`);
    }
  }
  process.exitCode = stale ? 1 : 0;
}
