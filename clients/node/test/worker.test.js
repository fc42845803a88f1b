'use strict';
// worker.test.js - handlers at work: in this process (jobq.Worker: done, a
// handler that throws, Retry, Fail, concurrency, ordering keys, cancel
// requests, stop), and under a real `jobq work --persistent` foreman
// through worker.js (the line protocol, console.log kept off the protocol,
// an ES module app, a partial last line dropped, bad lines refused).

const assert = require('assert');
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const test = require('node:test');
const support = require('./support');
const jobq = require('..');

const { eachStore, fresh, sleep } = support;
const WORKER = path.join(support.PACKAGE, 'worker.js');

function handlers() {
  const r = new jobq.Registry();
  const state = { running: 0, most: 0, order: [] };
  jobq.handle('echo', (job) => job.payload, r);
  jobq.handle('boom', (job) => { throw new RangeError(`boom on job ${job.id}`); }, r);
  jobq.handle('flaky', async (job) => {
    if (job.attempt === 1) throw new jobq.Retry('not yet', { delay: 50 });
    return { attempt: job.attempt };
  }, r);
  jobq.handle('refuse', (job) => { throw new jobq.Fail(`refused ${job.text}`); }, r);
  jobq.handle('slow', async (job) => {
    state.running += 1;
    state.most = Math.max(state.most, state.running);
    state.order.push(['start', job.key, job.text]);
    await sleep(150);
    state.running -= 1;
    state.order.push(['end', job.key, job.text]);
    return 'slept';
  }, r);
  jobq.handle('cancellable', (job) => new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve('never cancelled'), 30000);
    job.signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(new jobq.Fail('stopped on request'));
    });
  }), r);
  return { r, state };
}

function work(url, registry, queues, opts = {}) {
  const { until = 'empty', ...rest } = opts;
  return new jobq.Worker({ url, queues, poll: 50, registry, handleSignals: false, ...rest })
    .run({ until });
}

eachStore('in process: outcomes', async (t, store) => {
  const { q, url } = await fresh(t, store);
  const { r } = handlers();
  const ids = {};
  ids.echo = (await q.put('echo', Buffer.from([0, 0x68, 0xff]))).id;
  ids.boom = (await q.put('boom', 'x', { maxAttempts: 1 })).id;
  ids.flaky = (await q.put('flaky', 'x')).id;
  ids.refuse = (await q.put('refuse', 'it', { maxAttempts: 2, backoff: 50 })).id;
  ids.nobody = (await q.put('nobody', 'x', { maxAttempts: 1 })).id;
  const counts = await work(url, r, ['echo', 'boom', 'flaky', 'refuse', 'nobody']);
  assert.deepStrictEqual(counts, { done: 2, failed: 4, retry: 1, lost: 0 });
  assert.deepStrictEqual((await q.show(ids.echo)).result, Buffer.from([0, 0x68, 0xff]));
  let info = await q.show(ids.boom);
  assert.strictEqual(info.state, 'dead');
  assert.ok(info.lastError.includes(`RangeError: boom on job ${ids.boom}`), info.lastError);
  info = await q.show(ids.flaky);
  assert.deepStrictEqual([info.state, info.attempts, info.result.toString(), info.lastError],
    ['done', 2, '{"attempt":2}', 'not yet']);
  info = await q.show(ids.refuse);
  assert.deepStrictEqual([info.state, info.attempts, info.lastError], ['dead', 2, 'refused it']);
  assert.ok((await q.show(ids.nobody)).lastError.includes("no handler for queue 'nobody'"));
  assert.deepStrictEqual(await q.sessions(), []);
});

eachStore('in process: concurrency and ordering keys', async (t, store) => {
  const { q, url } = await fresh(t, store);
  const { r, state } = handlers();
  for (let i = 0; i < 3; i++) {
    for (const k of ['a', 'b']) await q.put('slow', `${k}${i}`, { key: k });
  }
  await work(url, r, ['slow'], { concurrency: 4 });
  assert.strictEqual((await q.stats())[0].done, 6);
  assert.strictEqual(state.most, 2); // one job per key at a time, both keys at once
  for (const k of ['a', 'b']) {
    const mine = state.order.filter(([, key]) => key === k).map(([what, , text]) => [what, text]);
    assert.deepStrictEqual(mine, [0, 1, 2].flatMap((i) => [['start', `${k}${i}`], ['end', `${k}${i}`]]));
  }
});

eachStore('in process: a cancel request aborts the job\'s signal', async (t, store) => {
  const { q, url } = await fresh(t, store);
  const { r } = handlers();
  const { id } = await q.put('cancellable', 'x');
  const done = work(url, r, ['cancellable'], { lease: 600 });
  const deadline = Date.now() + 30000;
  while ((await q.show(id)).state !== 'running' && Date.now() < deadline) await sleep(20);
  assert.strictEqual(await q.cancel(id), false);
  await done;
  const info = await q.show(id);
  assert.deepStrictEqual([info.state, info.lastError], ['cancelled', 'stopped on request']);
});

eachStore('in process: stop finishes the running jobs', async (t, store) => {
  const { q, url } = await fresh(t, store);
  const { r } = handlers();
  for (let i = 0; i < 20; i++) await q.put('slow', `s${i}`);
  const w = new jobq.Worker({ url, queues: ['slow'], concurrency: 2, poll: 50, registry: r,
    handleSignals: false });
  const running = w.run();
  await sleep(400);
  w.stop();
  await running;
  const [stats] = await q.stats();
  assert.strictEqual(stats.running, 0);
  assert.ok(stats.done > 0 && stats.done < 20, `done ${stats.done}`);
  assert.strictEqual(stats.done + stats.ready, 20);
  assert.deepStrictEqual(await q.sessions(), []);
});

eachStore('in process: a second stop does not wait', async (t, store) => {
  const { q, url } = await fresh(t, store);
  const r = new jobq.Registry();
  let aborted = false;
  jobq.handle('stuck', (job) => new Promise((resolve) => {
    job.signal.addEventListener('abort', () => { aborted = true; });
    setTimeout(resolve, 120000).unref();
  }), r);
  const { id } = await q.put('stuck', 'x');
  const w = new jobq.Worker({ url, queues: ['stuck'], poll: 50, registry: r, handleSignals: false });
  let returned = false;
  const running = w.run().then(() => { returned = true; });
  const deadline = Date.now() + 30000;
  while ((await q.show(id)).state !== 'running' && Date.now() < deadline) await sleep(20);
  w.stop();
  await sleep(500);
  assert.strictEqual(returned, false); // the first stop waits for the job
  w.stop();
  await running;
  assert.strictEqual(aborted, true);
  assert.strictEqual((await q.show(id)).state, 'ready'); // back to the queue
  assert.deepStrictEqual(await q.sessions(), []);
});

test('in process: no handlers is refused', async () => {
  await assert.rejects(new jobq.Worker({ registry: new jobq.Registry() }).run(),
    /no handlers are registered/);
  assert.throws(() => new jobq.Worker({ concurrency: 0 }), RangeError);
});

eachStore('in process: a result over the limit fails its job alone', async (t, store) => {
  const { q, url } = await fresh(t, store);
  const r = new jobq.Registry();
  jobq.handle('big', (job) => (job.text === 'big' ? Buffer.alloc(2 * 1024 * 1024) : 'small'), r);
  const a = await q.put('big', 'big', { maxAttempts: 1 });
  const b = await q.put('big', 'fine');
  await work(url, r, ['big'], { concurrency: 2 });
  const info = await q.show(a.id);
  assert.strictEqual(info.state, 'dead');
  assert.ok(info.lastError.includes('over the limit'), info.lastError);
  assert.strictEqual((await q.show(b.id)).result.toString(), 'small');
});

const APP = `
const { execSync } = require('child_process');
const jobq = require('jobq');

jobq.handle('email', async (job) => {
  console.log('handler output goes to stderr', job.id);   // not to the protocol
  process.stdout.write('so does this\\n');
  if (job.text === 'boom') throw new Error('bad address ' + job.text);
  if (job.text === 'refuse') throw new jobq.Fail('refused');
  if (job.text === 'retry' && job.attempt === 1) throw new jobq.Retry('later', { delay: 50 });
  return { id: job.id, queue: job.queue, attempt: job.attempt, key: job.key, claim: job.claim,
    prevLost: job.prevLost, payload: job.payload.toString('hex') };
});
`;

const ESM_APP = `
import jobq from 'jobq';
jobq.handle(null, async (job) => Buffer.concat([Buffer.from('any '), job.payload]));
`;

// A folder where require('jobq') is this package, with the two apps.
function appDir(t) {
  const dir = support.tmpdir(t);
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(support.PACKAGE, path.join(dir, 'node_modules', 'jobq'));
  fs.writeFileSync(path.join(dir, 'app.js'), APP);
  fs.writeFileSync(path.join(dir, 'other.mjs'), ESM_APP);
  return dir;
}

eachStore('persistent: under the foreman', async (t, store) => {
  const { q, url } = await fresh(t, store);
  const dir = appDir(t);
  const ids = {};
  ids.bytes = (await q.put('email', Buffer.from([0, 10, 0xff]), { key: 'k\u00e9y' })).id;
  ids.boom = (await q.put('email', 'boom', { maxAttempts: 1 })).id;
  ids.refuse = (await q.put('email', 'refuse', { maxAttempts: 1 })).id;
  ids.retry = (await q.put('email', 'retry')).id;
  ids.other = (await q.put('other', 'x')).id;
  const r = spawnSync(support.JOBQ, ['work', '--persistent', '-c', '2', '--poll', '50ms',
    '--until-empty', '--', process.execPath, WORKER, 'app.js', './other.mjs'],
  { cwd: dir, env: support.env({ JOBQ_DB: url }), encoding: 'utf8', timeout: 60000 });
  assert.strictEqual(r.status, 0, r.stderr);
  // The handler wrote to stdout: had that reached the protocol, the
  // foreman would have failed the job with a protocol error.
  const out = JSON.parse((await q.show(ids.bytes)).result.toString());
  assert.deepStrictEqual([out.queue, out.attempt, out.key, out.prevLost, out.payload],
    ['email', 1, 'k\u00e9y', false, '000aff']);
  assert.strictEqual(out.claim, (await q.show(ids.bytes)).claim);
  let info = await q.show(ids.boom);
  assert.strictEqual(info.state, 'dead');
  assert.ok(info.lastError.includes('Error: bad address boom'), info.lastError);
  assert.strictEqual((await q.show(ids.refuse)).lastError, 'refused');
  info = await q.show(ids.retry);
  assert.deepStrictEqual([info.state, info.attempts, info.lastError], ['done', 2, 'later']);
  assert.strictEqual((await q.show(ids.other)).result.toString(), 'any x');
});

function worker(t, input, ...targets) {
  const dir = appDir(t);
  return spawnSync(process.execPath, [WORKER, ...(targets.length ? targets : ['app.js', 'other.mjs'])],
    { cwd: dir, input, env: support.env(), encoding: 'utf8', timeout: 60000 });
}

const CLAIM = 'a'.repeat(32);

test('protocol: a partial last line is dropped', (t) => {
  const r = worker(t, `job 7 other 1 25 0 ${CLAIM} - aGk=\njob 8 other 1 25 0 ${CLAIM} - aG`);
  assert.strictEqual(r.status, 0, r.stderr);
  assert.strictEqual(r.stdout, 'ready\ndone 7 YW55IGhp\n');
  assert.match(r.stderr, /dropped the last line/);
});

test('protocol: later fields are ignored', (t) => {
  const r = worker(t, `job 7 other 1 25 1 ${CLAIM} - - future fields\n`);
  assert.strictEqual(r.stdout, 'ready\ndone 7 YW55IA==\n');
});

test('protocol: what is not a job line stops the worker', (t) => {
  for (const line of ['hello\n', 'job 7 other 1 25 0\n', 'job x other 1 25 0 c - -\n',
    'job 7 other 1 25 0 c - !!!\n']) {
    const r = worker(t, line);
    assert.strictEqual(r.status, 1, line);
    assert.strictEqual(r.stdout, 'ready\n');
    assert.match(r.stderr, /jobq worker: /);
  }
});

test('protocol: no handlers, no ready', (t) => {
  const dir = appDir(t);
  fs.writeFileSync(path.join(dir, 'empty.js'), 'module.exports = 1;\n');
  let r = spawnSync(process.execPath, [WORKER, 'empty.js'], { cwd: dir, encoding: 'utf8' });
  assert.strictEqual(r.status, 2);
  assert.strictEqual(r.stdout, '');
  assert.match(r.stderr, /no handlers: empty.js registered none/);
  r = spawnSync(process.execPath, [WORKER, 'nosuch.js'], { cwd: dir, encoding: 'utf8' });
  assert.strictEqual(r.status, 1);
  assert.match(r.stderr, /cannot load nosuch.js/);
});
