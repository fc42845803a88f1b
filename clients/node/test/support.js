'use strict';
// support.js - what the Node client's tests share: where the source tree,
// the jobq command and the library are, a fresh queue database per test on
// SQLite (a temporary file) and on the PostgreSQL server that tests/run.sh
// started (a schema of its own, named jqcl_*, dropped afterwards), SQL run
// as the server's owner through psql, and a test per store.
//
// Environment: JOBQ_LIBRARY (the library under test), JOBQ (the jobq
// command), JOBQ_TEST_PG_URL (the server; PostgreSQL cases are skipped
// without it).

const { spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const test = require('node:test');
const jobq = require('..');

const PACKAGE = path.resolve(__dirname, '..');
const ROOT = path.resolve(PACKAGE, '../..');
const JOBQ = process.env.JOBQ || path.join(ROOT, 'build', 'jobq');
const PG_URL = process.env.JOBQ_TEST_PG_URL || '';
const NO_PG = 'JOBQ_TEST_PG_URL is not set (tests/run.sh starts a server)';
let names = 0;

function tmpdir(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jqcl-node.'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function pgParts() {
  const u = new URL(PG_URL.split('?')[0]);
  return { host: u.hostname, port: Number(u.port), user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password), database: u.pathname.slice(1) };
}

// The environment for a tool (psql, sqlite3): without the sanitizer
// runtime that tests/cli_clients.sh preloads for a sanitizer build.
function toolEnv(more = {}) {
  const e = { ...process.env, ...more };
  delete e.LD_PRELOAD;
  delete e.ASAN_OPTIONS;
  return e;
}

// Runs sql on the test server as its owner; returns stdout.
function psql(sql) {
  const p = pgParts();
  const r = spawnSync('psql', ['-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-h', p.host, '-p',
    String(p.port), '-U', p.user, '-d', p.database, '-c', sql], {
    env: toolEnv({ PGPASSWORD: p.password, PGOPTIONS: '-c client_min_messages=warning' }),
    encoding: 'utf8', timeout: 60000 });
  if (r.status !== 0) throw new Error(`psql ${sql}: ${r.stderr}`);
  return r.stdout;
}

// A fresh database URL for t on store: { url, schema, dir }.
function freshUrl(t, store, dir) {
  names += 1;
  if (store === 'sqlite') return { url: `sqlite:${path.join(dir, `queue-${names}.db`)}` };
  const schema = `jqcl_n${process.pid}_${names}`;
  t.after(() => psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
  return { url: `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}schema=${schema}`, schema };
}

// A fresh database for t: { url, schema, dir, q (an open Client) }.
async function fresh(t, store) {
  const dir = tmpdir(t);
  const { url, schema } = freshUrl(t, store, dir);
  const q = await jobq.connect(url);
  t.after(() => q.close());
  if (store === 'postgres') await q.init();
  return { url, schema, dir, q };
}

// Defines the test name once per store ("name [sqlite]"), fn(t, store).
function eachStore(name, fn) {
  for (const store of ['sqlite', 'postgres']) {
    const skip = store === 'postgres' && !PG_URL ? NO_PG : false;
    test(`${name} [${store}]`, { skip }, (t) => fn(t, store));
  }
}

// The environment of a child process, with more.
function env(more = {}) {
  return { ...process.env, ...more };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

module.exports = { PACKAGE, ROOT, JOBQ, PG_URL, NO_PG, tmpdir, toolEnv, psql, pgParts, freshUrl,
  fresh, eachStore, env, sleep };
