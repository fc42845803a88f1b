'use strict';
// types.test.js - index.d.ts: declares every export of index.js and no
// other, and a TypeScript program using the package type-checks against
// it (tsc, strict).

const assert = require('assert');
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const test = require('node:test');
const support = require('./support');
const jobq = require('..');

test('index.d.ts declares exactly the exports', () => {
  const dts = fs.readFileSync(path.join(support.PACKAGE, 'index.d.ts'), 'utf8');
  const declared = new Set([...dts.matchAll(/^export (?:class|function|const|namespace) (\w+)/gm)]
    .map((m) => m[1]));
  assert.deepStrictEqual([...declared].sort(), Object.keys(jobq).sort());
});

test('a TypeScript program type-checks', (t) => {
  const tsc = path.join(support.PACKAGE, 'node_modules', 'typescript', 'bin', 'tsc');
  if (!fs.existsSync(tsc)) {
    t.skip('typescript is not installed (npm ci in clients/node installs the dev dependencies)');
    return;
  }
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(__dirname, 'tsconfig.json')],
    { encoding: 'utf8', timeout: 120000 });
  assert.strictEqual(r.status, 0, r.stdout + r.stderr);
});
