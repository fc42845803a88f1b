'use strict';
// client.test.js - the Client and Session on SQLite and PostgreSQL: put
// with every option, putMany all or nothing, inspection and administration,
// claim and every acknowledgement, a lost claim (Lost), the database's
// identity (Identity), calls that wait on the database never stall the
// event loop, and concurrent calls on one client.

const assert = require('assert');
const { spawn, spawnSync } = require('child_process');
const test = require('node:test');
const support = require('./support');
const jobq = require('..');

const { eachStore, fresh, sleep } = support;

eachStore('put with every option', async (t, store) => {
  const { q } = await fresh(t, store);
  const a = await q.put('email', Buffer.from([0, 0x61, 0xff]), { key: 'ada', priority: 7,
    maxAttempts: 3, timeout: 2500, backoff: 250 });
  assert.strictEqual(a.existed, false);
  let info = await q.show(a.id);
  assert.deepStrictEqual([info.queue, info.key, info.priority, info.maxAttempts, info.timeout,
    info.backoff, info.payload, info.state],
  ['email', 'ada', 7, 3, 2500, 250, Buffer.from([0, 0x61, 0xff]), 'ready']);
  const u1 = await q.put('email', 'once', { unique: 'welcome-ada' });
  const u2 = await q.put('email', 'twice', { unique: 'welcome-ada' });
  assert.deepStrictEqual(u2, { id: u1.id, existed: true });
  info = await q.show(u1.id);
  assert.deepStrictEqual([info.uniqueKey, info.payload.toString()], ['welcome-ada', 'once']);
  const later = await q.put('email', null, { delay: 3600 * 1000 });
  assert.deepStrictEqual((await q.ls({ state: 'scheduled' })).map((j) => j.id), [later.id]);
  const when = new Date(Date.now() + 86400 * 1000);
  const at = await q.put('email', { n: 1 }, { at: when });
  info = await q.show(at.id);
  assert.ok(Math.abs(info.runAt - when) < 10);
  assert.strictEqual(info.payload.toString(), '{"n":1}');
  const b1 = await q.put('reports', 'step 1');
  const bar = await q.put('reports', 'barrier', { barrier: true });
  info = await q.show(bar.id);
  assert.deepStrictEqual([info.barrier, info.state], [true, 'waiting']);
  assert.strictEqual((await q.show(b1.id)).state, 'ready');
});

eachStore('put refuses bad input and writes nothing', async (t, store) => {
  const { q } = await fresh(t, store);
  const cases = [
    [jobq.Invalid, "invalid queue name 'Bad Queue'", 'Bad Queue', {}],
    [jobq.Invalid, "invalid priority '40000'", 'email', { priority: 40000 }],
    [jobq.Invalid, "invalid max attempts '0'", 'email', { maxAttempts: 0 }],
    [jobq.Invalid, "invalid delay '-1000ms'", 'email', { delay: -1000 }],
    [jobq.Invalid, 'a barrier cannot have an ordering key', 'email', { barrier: true, key: 'k' }],
    [jobq.Invalid, "invalid priority '5000000000'", 'email', { priority: 5e9 }],
    [TypeError, "invalid delay '10s'", 'email', { delay: '10s' }],
    [TypeError, "unexpected option 'colour'", 'email', { colour: 'red' }],
  ];
  for (const [cls, text, queue, opts] of cases) {
    await assert.rejects(q.put(queue, 'x', opts), (e) => e instanceof cls && e.message.includes(text),
      text);
  }
  await assert.rejects(q.put('email', Buffer.alloc(1024 * 1024 + 1)), jobq.TooBig);
  assert.deepStrictEqual(await q.stats(), []);
});

eachStore('putMany is one transaction', async (t, store) => {
  const { q } = await fresh(t, store);
  const ids = await q.putMany(['a', new jobq.Put('b', { key: 'k' }), new jobq.Put('c', { queue: 'sms' }),
    new jobq.Put('d', { unique: 'u' }), { to: 'ada' }], { queue: 'email', priority: 2 });
  assert.strictEqual(ids.length, 5);
  assert.strictEqual((await q.show(ids[1].id)).key, 'k');
  assert.strictEqual((await q.show(ids[2].id)).queue, 'sms');
  assert.strictEqual((await q.show(ids[4].id)).payload.toString(), '{"to":"ada"}');
  for (const { id } of ids) assert.strictEqual((await q.show(id)).priority, 2);
  const again = await q.putMany([new jobq.Put('e', { unique: 'u' })], { queue: 'email' });
  assert.deepStrictEqual(again, [{ id: ids[3].id, existed: true }]);
  const before = (await q.identity()).seq;
  await assert.rejects(q.putMany(['ok', 'ok', new jobq.Put('bad', { priority: 99999 })],
    { queue: 'email' }), (e) => e instanceof jobq.Invalid && e.message.startsWith('job 2: '));
  assert.throws(() => new jobq.Put('x', { colour: 'red' }), /unexpected option 'colour'/);
  await assert.rejects(q.putMany(['x'], { colour: 'red' }),
    (e) => e instanceof TypeError && e.message.startsWith("job 0: unexpected option 'colour'"));
  assert.strictEqual((await q.ls()).length, 5);
  assert.strictEqual((await q.identity()).seq, before);
  assert.deepStrictEqual(await q.putMany([]), []);
});

eachStore('put after other jobs', async (t, store) => {
  const { q } = await fresh(t, store);
  const a = (await q.put('email', 'a')).id;
  const b = (await q.put('email', 'b', { after: [a] })).id;
  assert.strictEqual((await q.show(b)).state, 'pending');
  assert.deepStrictEqual((await q.stats()).map((s) => s.pending), [1]);
  const graph = await q.putMany(['root', new jobq.Put('l', { afterIndex: [0] }),
    new jobq.Put('join', { afterIndex: [0, 1], after: [a], afterAnyOutcome: true })],
  { queue: 'email' });
  const states = [];
  for (const { id } of graph) states.push((await q.show(id)).state);
  assert.deepStrictEqual(states, ['ready', 'pending', 'pending']);
  await assert.rejects(q.put('email', 'x', { after: [a + 1000] }),
    (e) => e instanceof jobq.Invalid && e.message.includes(`unknown job ${a + 1000}`));
  await assert.rejects(q.putMany(['x', new jobq.Put('y', { afterIndex: [1] })]),
    (e) => e instanceof jobq.Invalid && e.message.includes("job 1: invalid after_index '1'"));
  await assert.rejects(q.put('email', 'x', { after: a }), TypeError);
  assert.strictEqual((await q.ls()).length, 5);
});

eachStore('stats, show, ls, cancel, retry, pause, resume', async (t, store) => {
  const { q } = await fresh(t, store);
  const ids = [];
  for (let i = 0; i < 5; i++) ids.push((await q.put('email', `p${i}`)).id);
  await q.put('sms', 'x', { delay: 3600000 });
  const stats = Object.fromEntries((await q.stats()).map((s) => [s.name, s]));
  assert.deepStrictEqual([stats.email.ready, stats.sms.scheduled, stats.email.keyPolicy],
    [5, 1, 'block']);
  assert.deepStrictEqual((await q.ls({ queue: 'email', limit: 2 })).map((j) => j.id), ids.slice(0, 2));
  assert.deepStrictEqual((await q.ls({ queue: 'email', after: ids[1] })).map((j) => j.id),
    ids.slice(2));
  assert.strictEqual((await q.ls({ queue: 'email' }))[0].payload, null);
  await assert.rejects(q.ls({ state: 'finished' }), /invalid state 'finished'/);
  await assert.rejects(q.show(1e9), jobq.NotFound);
  assert.strictEqual(await q.cancel(ids[0]), true);
  assert.strictEqual((await q.show(ids[0])).state, 'cancelled');
  await assert.rejects(q.cancel(ids[0]), jobq.WrongState);
  await assert.rejects(q.retry(ids[1]), jobq.WrongState);
  await q.retry(ids[0]);
  assert.strictEqual((await q.show(ids[0])).state, 'ready');
  await q.pause('email');
  assert.strictEqual((await q.stats()).find((s) => s.name === 'email').paused, true);
  const s = await q.session();
  assert.deepStrictEqual(await s.claim('email', 10), []);
  await q.resume('email');
  assert.strictEqual((await s.claim('email', 10)).length, 5);
  await s.close();
  assert.strictEqual(await q.retryDead('email'), 0);
});

eachStore('claim, complete, fail, retry, release', async (t, store) => {
  const { q } = await fresh(t, store);
  const ids = (await q.putMany(['done', 'fail', 'later', 'release'],
    { queue: 'work', maxAttempts: 2, backoff: 60000 })).map((r) => r.id);
  await q.put('work', 'dead-at-once', { maxAttempts: 1 });
  const s = await q.session({ name: 'tests', lease: 30000 });
  assert.strictEqual(s.id.length, 32);
  assert.strictEqual(s.lease, 30000);
  const jobs = Object.fromEntries((await s.claim(['work'], 10)).map((j) => [j.text, j]));
  assert.strictEqual(Object.keys(jobs).length, 5);
  const j = jobs.done;
  assert.deepStrictEqual([j.queue, j.attempt, j.maxAttempts, j.prevLost, j.claim.length],
    ['work', 1, 2, false, 32]);
  assert.strictEqual((await q.show(j.id)).state, 'running');
  assert.strictEqual(await s.complete(j, { ok: true }), false);
  assert.strictEqual(await s.complete(j, { ok: true }), true); // a repeat: already done
  await s.fail(jobs.fail, 'smtp down');
  await s.retryLater(jobs.later, { delay: 3600000, reason: 'not yet' });
  await s.release(jobs.release);
  await s.fail(jobs['dead-at-once'], 'no way');
  await s.close();
  let info = await q.show(ids[0]);
  assert.deepStrictEqual([info.state, info.result.toString(), info.attempts], ['done', '{"ok":true}', 1]);
  info = await q.show(ids[1]);
  assert.deepStrictEqual([info.state, info.lastError, info.attempts], ['ready', 'smtp down', 1]);
  assert.ok(info.runAt > new Date());
  info = await q.show(ids[2]);
  assert.deepStrictEqual([info.state, info.lastError], ['ready', 'not yet']);
  assert.ok(info.runAt - Date.now() > 50 * 60 * 1000);
  info = await q.show(ids[3]);
  assert.deepStrictEqual([info.state, info.attempts], ['ready', 0]);
  assert.deepStrictEqual((await q.ls({ state: 'dead' })).map((d) => d.lastError), ['no way']);
});

eachStore('a lost claim changes nothing', async (t, store) => {
  const { q } = await fresh(t, store);
  const { id } = await q.put('work', 'slow');
  const s1 = await q.session({ name: 'slow', lease: 200 });
  const [job] = await s1.claim('work');
  await sleep(600); // the lease runs out on the database clock
  const s2 = await q.session({ name: 'other', lease: 30000 }); // opening it reaps s1
  const [again] = await s2.claim('work');
  assert.deepStrictEqual([again.id, again.attempt, again.prevLost], [id, 2, true]);
  assert.notStrictEqual(again.claim, job.claim);
  await assert.rejects(s1.complete(job, 'late result'), (e) => e instanceof jobq.Lost &&
    e.code === 'JOBQ_ELOST' && e.message.includes(`job ${id}: claim '${job.claim}' is no longer held`));
  await assert.rejects(s1.fail(job, 'late error'), jobq.Lost);
  await assert.rejects(s1.heartbeat(), jobq.Expired);
  await s2.complete(again, 'fresh');
  await s1.close();
  await s2.close();
  const info = await q.show(id);
  assert.deepStrictEqual([info.state, info.result.toString(), info.attempts], ['done', 'fresh', 2]);
});

eachStore('cancel of a running job reaches its session', async (t, store) => {
  const { q } = await fresh(t, store);
  const { id } = await q.put('work', 'long');
  const s = await q.session({ lease: 30000 });
  const [job] = await s.claim('work');
  assert.strictEqual(await q.cancel(id), false);
  assert.deepStrictEqual(await s.heartbeat(), [id]);
  await assert.rejects(s.extend(job, 10000), jobq.Cancelled);
  await s.fail(job, 'stopped');
  await s.close();
  assert.strictEqual((await q.show(id)).state, 'cancelled');
});

eachStore('concurrent calls on one client take turns', async (t, store) => {
  const { q } = await fresh(t, store);
  const puts = [];
  for (let i = 0; i < 100; i++) puts.push(q.put('shared', `p${i}`));
  const ids = (await Promise.all(puts)).map((r) => r.id);
  assert.strictEqual(new Set(ids).size, 100);
  assert.deepStrictEqual(ids, [...ids].sort((x, y) => x - y)); // in the order they were made
  assert.strictEqual((await q.stats())[0].ready, 100);
});

eachStore('a closed client refuses calls', async (t, store) => {
  const { url } = await fresh(t, store);
  const q = await jobq.connect(url);
  await q.close();
  await q.close();
  await assert.rejects(q.put('email', 'x'), jobq.WrongState);
});

eachStore('identity refuses another database', async (t, store) => {
  const { q, url, schema, dir } = await fresh(t, store);
  await q.put('work', 'one');
  const s = await q.session({ lease: 30000 });
  t.after(() => s.close());
  const [job] = await s.claim('work');
  await s.complete(job);
  const before = await q.identity();
  assert.deepStrictEqual([before.epoch, before.seq], [1, 1]);
  assert.ok(before.schemaVersion >= 1);
  // Another queue database takes this one's place under the live handle,
  // as an operator restoring the wrong backup would do.
  const other = support.freshUrl(t, store, dir);
  const o = await jobq.connect(other.url);
  if (store === 'postgres') await o.init();
  await o.put('work', 'theirs');
  await o.close();
  if (store === 'sqlite') {
    const r = spawnSync('sqlite3', [url.slice('sqlite:'.length),
      `.restore ${other.url.slice('sqlite:'.length)}`], { env: support.toolEnv() });
    assert.strictEqual(r.status, 0, String(r.stderr));
  } else {
    support.psql(`DROP SCHEMA ${schema} CASCADE; ALTER SCHEMA ${other.schema} RENAME TO ${schema}`);
  }
  await assert.rejects(q.session({ lease: 30000 }), (e) => e instanceof jobq.Identity && e.message.length > 0);
  await assert.rejects(s.claim('work'), (e) => e instanceof jobq.Identity || e instanceof jobq.Expired);
  assert.notStrictEqual((await q.identity()).queueId, before.queueId);
});

test('a call that waits on the database leaves the event loop free', async (t) => {
  const dir = support.tmpdir(t);
  const file = `${dir}/queue.db`;
  const q = await jobq.connect(`sqlite:${file}?busy_timeout=20s`);
  t.after(() => q.close());
  await q.put('email', 'first');
  // Another process holds the write lock; our put waits for it.
  const holder = spawn('sqlite3', [file], { stdio: ['pipe', 'pipe', 'inherit'],
    env: support.toolEnv() });
  holder.stdin.write('BEGIN IMMEDIATE;\nSELECT \'locked\';\n');
  await new Promise((resolve) => holder.stdout.once('data', resolve));
  let ticks = 0;
  const timer = setInterval(() => { ticks += 1; }, 10);
  let settled = false;
  const put = q.put('email', 'second');
  put.then(() => { settled = true; }, () => { settled = true; });
  await sleep(300);
  const whileLocked = ticks;
  assert.strictEqual(settled, false, 'the put did not wait for the lock');
  holder.stdin.end('COMMIT;\n');
  const { id } = await put;
  clearInterval(timer);
  assert.ok(whileLocked >= 5, `the event loop ran ${whileLocked} timer ticks while the put waited`);
  assert.strictEqual((await q.show(id)).payload.toString(), 'second');
});
