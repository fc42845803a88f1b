'use strict';
// support.js - what the Node client's tests share: where the source tree,
// the jobq command and the library are, a fresh queue database per test on
// SQLite (a temporary file), on the PostgreSQL server that tests/run.sh
// started (a schema of its own, named jqcl_*, dropped afterwards) and on
// its MariaDB server (a database of its own, jqcl_*, dropped afterwards),
// SQL run as the servers' owner through psql and mariadb, and a test per
// store.
//
// Environment: JOBQ_LIBRARY (the library under test), JOBQ (the jobq
// command), JOBQ_TEST_PG_URL and JOBQ_TEST_MYSQL_URL (the servers; their
// cases are skipped without them).

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
const MY_URL = process.env.JOBQ_TEST_MYSQL_URL || '';
const NO_MY = 'JOBQ_TEST_MYSQL_URL is not set (tests/run.sh starts a server)';
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

// Runs sql on the test MariaDB server as its jobq user; returns stdout.
function mariadb(sql) {
  const u = new URL(MY_URL.split('?')[0]);
  const r = spawnSync('mariadb', ['--no-defaults', '-h', u.hostname, '-P', u.port, '-u',
    decodeURIComponent(u.username), '-N', '-B', '-e', sql], {
    env: toolEnv({ MYSQL_PWD: decodeURIComponent(u.password) }), encoding: 'utf8',
    timeout: 60000 });
  if (r.status !== 0) throw new Error(`mariadb ${sql}: ${r.stderr}`);
  return r.stdout;
}

// A fresh database URL for t on store: { url, schema, dir }.
function freshUrl(t, store, dir) {
  names += 1;
  if (store === 'sqlite') return { url: `sqlite:${path.join(dir, `queue-${names}.db`)}` };
  if (store === 'mysql') {
    const name = `jqcl_n${process.pid}_${names}`;
    mariadb(`CREATE DATABASE ${name}`);
    t.after(() => mariadb(`DROP DATABASE IF EXISTS ${name}`));
    const u = new URL(MY_URL);
    u.pathname = `/${name}`;
    return { url: u.toString() };
  }
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
  if (store !== 'sqlite') await q.init();
  return { url, schema, dir, q };
}

// Defines the test name once per store ("name [sqlite]"), fn(t, store):
// SQLite and PostgreSQL, or the stores named.
function eachStore(name, fn, stores = ['sqlite', 'postgres']) {
  for (const store of stores) {
    let skip = false;
    if (store === 'postgres' && !PG_URL) skip = NO_PG;
    if (store === 'mysql' && !MY_URL) skip = NO_MY;
    test(`${name} [${store}]`, { skip }, (t) => fn(t, store));
  }
}

// The environment of a child process, with more.
function env(more = {}) {
  return { ...process.env, ...more };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

module.exports = { PACKAGE, ROOT, JOBQ, PG_URL, NO_PG, MY_URL, tmpdir, toolEnv, psql, pgParts,
  mariadb, freshUrl, fresh, eachStore, env, sleep };
