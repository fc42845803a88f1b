'use strict';
// native.test.js - the package against include/jobq.h and libjobq: one
// error class per entry of the error table and no other, the C structures'
// layout as the compiler sees it, and finding the library ($JOBQ_LIBRARY,
// then the loader path by soname), with a clear error when it is missing.

const assert = require('assert');
const { spawnSync, execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const test = require('node:test');
const support = require('./support');
const jobq = require('..');
const native = require('../lib/native');
const errors = require('../lib/errors');

const HEADER = path.join(support.ROOT, 'include', 'jobq.h');

function headerErrors() {
  const text = fs.readFileSync(HEADER, 'utf8');
  const table = text.match(/#define JOBQ_ERRNO_MAP\(X\)([\s\S]*?)\n\n/)[1];
  return [...table.matchAll(/X\((\w+),\s*(-?\d+),\s*"([^"]*)"\)/g)]
    .map((m) => ({ name: m[1], value: Number(m[2]), message: m[3] }));
}

test('every error of the header has its class', () => {
  const N = native.load();
  const table = headerErrors();
  assert.ok(table.length > 10);
  for (const { name, value, message } of table) {
    if (value === 0) continue;
    const cls = errors.byCode.get(value);
    assert.ok(cls, `JOBQ_${name} (${value}) has no error class`);
    assert.strictEqual(cls.code, `JOBQ_${name}`);
    assert.strictEqual(jobq[cls.name], cls, `jobq.${cls.name}`);
    const e = new cls('x');
    assert.ok(e instanceof jobq.JobqError && e instanceof Error);
    assert.strictEqual(e.name, cls.name);
    assert.strictEqual(e.errno, value);
    assert.strictEqual(N.fn.jobq_err_name(value), `JOBQ_${name}`);
    assert.strictEqual(N.fn.jobq_strerror(value), message);
  }
});

test('no class without an error in the header', () => {
  const codes = new Set(headerErrors().map((e) => e.value));
  for (const [code, cls] of errors.byCode) {
    assert.ok(codes.has(code), `${cls.name} (${code}) is not in JOBQ_ERRNO_MAP`);
  }
});

test('an unknown code is still an error', () => {
  const e = errors.fromCode(-99, 'something new', native.load().fn.jobq_err_name(-99));
  assert.ok(e instanceof jobq.JobqError);
  assert.deepStrictEqual([e.errno, e.code, e.message], [-99, 'JOBQ_EUNKNOWN', 'something new']);
});

test('the messages come from the library', async () => {
  await assert.rejects(jobq.connect('nosuch:thing'), (e) => e instanceof jobq.InvalidURL &&
    e.message.includes('nosuch') && e.errno === -2);
});

test('structures match the header', (t) => {
  const cc = spawnSync('sh', ['-c', 'command -v cc']).stdout.toString().trim();
  if (!cc) {
    t.skip('no C compiler (cc) to read the header\'s layout');
    return;
  }
  const { types } = native.load();
  const lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "jobq.h"',
    'int main(void) {'];
  for (const name of native.STRUCTS) {
    lines.push(`  printf("${name} %zu", sizeof(${name}));`);
    for (const field of Object.keys(types[name].members)) {
      lines.push(`  printf(" ${field}=%zu:%zu", offsetof(${name}, ${field}), ` +
        `sizeof(((${name} *)0)->${field}));`);
    }
    lines.push('  printf("\\n");');
  }
  lines.push('  return 0;\n}\n');
  const dir = support.tmpdir(t);
  fs.writeFileSync(path.join(dir, 'layout.c'), lines.join('\n'));
  execFileSync(cc, ['-std=c17', '-I', path.dirname(HEADER), '-o', path.join(dir, 'layout'),
    path.join(dir, 'layout.c')]);
  const out = execFileSync(path.join(dir, 'layout'), { encoding: 'utf8' });
  for (const line of out.trim().split('\n')) {
    const [name, size, ...fields] = line.split(' ');
    const type = types[name];
    assert.strictEqual(type.size, Number(size), `sizeof(${name})`);
    for (const f of fields) {
      const [field, where] = f.split('=');
      const [offset, fsize] = where.split(':').map(Number);
      assert.strictEqual(type.members[field].offset, offset, `offsetof(${name}, ${field})`);
      assert.strictEqual(type.members[field].type.size, fsize, `sizeof ${name}.${field}`);
    }
  }
});

test('the limits\' bounds are the header\'s', () => {
  const text = fs.readFileSync(HEADER, 'utf8');
  for (const [name, value] of [['JOBQ_LIMIT_MAX', native.LIMIT_MAX],
    ['JOBQ_LIMIT_PERIOD_MAX', native.LIMIT_PERIOD_MAX]]) {
    assert.strictEqual(Number(text.match(new RegExp(`#define ${name} (\\d+)`))[1]), value, name);
  }
});

test('the version is the header\'s', () => {
  const version = fs.readFileSync(HEADER, 'utf8').match(/#define JOBQ_VERSION "([^"]+)"/)[1];
  assert.strictEqual(jobq.version, version);
  assert.strictEqual(jobq.libraryVersion(), version);
  assert.strictEqual(require('../package.json').version, version);
});

// Loads the library in a new node with environ; returns its output.
function loadInChild(environ) {
  const code = `const jobq = require(${JSON.stringify(support.PACKAGE)});
    try { console.log('loaded', jobq.libraryVersion()); }
    catch (e) { console.log(e instanceof jobq.LibraryError ? 'error: ' + e.message : e); }`;
  const e = { ...process.env };
  delete e.JOBQ_LIBRARY;
  delete e.LD_LIBRARY_PATH;
  const r = spawnSync(process.execPath, ['-e', code], { env: { ...e, ...environ },
    encoding: 'utf8', timeout: 60000 });
  return r.stdout + r.stderr;
}

function libraryPath() {
  return process.env.JOBQ_LIBRARY || path.join(support.ROOT, 'build', 'libjobq.so');
}

test('JOBQ_LIBRARY names the file', () => {
  assert.match(loadInChild({ JOBQ_LIBRARY: libraryPath() }), /^loaded /);
});

test('a bad JOBQ_LIBRARY is named', (t) => {
  const missing = path.join(support.tmpdir(t), 'nothere.so');
  assert.match(loadInChild({ JOBQ_LIBRARY: missing }),
    new RegExp(`^error: cannot load libjobq from JOBQ_LIBRARY '${missing}'`));
});

test('the loader finds the soname first', (t) => {
  const dir = support.tmpdir(t);
  fs.symlinkSync(libraryPath(), path.join(dir, 'libjobq.so.0'));
  assert.match(loadInChild({ LD_LIBRARY_PATH: dir }), /^loaded /);
});

test('the loader finds the development name', (t) => {
  const dir = support.tmpdir(t);
  fs.symlinkSync(libraryPath(), path.join(dir, 'libjobq.so'));
  assert.match(loadInChild({ LD_LIBRARY_PATH: dir }), /^loaded /);
});

test('missing everywhere names both places', (t) => {
  if (['/usr/lib', '/usr/local/lib', '/lib'].some((d) => fs.existsSync(`${d}/libjobq.so.0`))) {
    t.skip("libjobq is installed on this machine's loader path");
    return;
  }
  assert.match(loadInChild({ LD_LIBRARY_PATH: support.tmpdir(t) }),
    /^error: cannot load libjobq: JOBQ_LIBRARY is not set and the system's loader path has neither libjobq.so.0 nor libjobq.so/);
});
