'use strict';
// limits.test.js - a queue's limits through the Client on SQLite,
// PostgreSQL and MariaDB: set, read back, change and remove them; bad values refused
// with the value named and nothing changed; and what they do to claims: a
// running limit holds a second session back until the first one's job is
// done, a rate limit, a limit per ordering key and a rate per ordering key
// hold claims back, and limits() says the queue is held.

const assert = require('assert');
const support = require('./support');
const jobq = require('..');

const { fresh } = support;
const STORES = ['sqlite', 'postgres', 'mysql'];
const eachStore = (name, fn) => support.eachStore(name, fn, STORES);

const NONE = { running: null, rate: null, ratePeriod: null, runningPerKey: null,
  ratePerKey: null, ratePerKeyPeriod: null, runningNow: 0, claimedNow: 0, keysFullNow: 0,
  held: false };

eachStore('limits: set, read back, change and remove', async (t, store) => {
  const { q } = await fresh(t, store);
  assert.deepStrictEqual(await q.limits(), []);
  assert.deepStrictEqual(await q.limits('email'), { queue: 'email', ...NONE });
  await q.setLimits('email', { running: 5, rate: '100/1m', runningPerKey: 2 });
  const got = await q.limits('email');
  assert.deepStrictEqual(got, { queue: 'email', ...NONE, running: 5, rate: 100,
    ratePeriod: 60000, runningPerKey: 2 });
  assert.deepStrictEqual(await q.limits(), [got]);
  await q.setLimits('sms', { rate: { count: 10, period: 250 } });
  assert.deepStrictEqual((await q.limits()).map((l) => [l.queue, l.rate, l.ratePeriod]),
    [['email', 100, 60000], ['sms', 10, 250]]);
  // Setting replaces: what is not given is no longer limited.
  await q.setLimits('email', { running: 1 });
  assert.deepStrictEqual(await q.limits('email'), { ...got, running: 1, rate: null,
    ratePeriod: null, runningPerKey: null });
  await q.setLimits('email', { ratePerKey: '3/1m' });
  const perKey = await q.limits('email');
  assert.deepStrictEqual([perKey.running, perKey.ratePerKey, perKey.ratePerKeyPeriod],
    [null, 3, 60000]);
  await q.setLimits('email', { rate: '7/s' });
  const seven = await q.limits('email');
  assert.deepStrictEqual([seven.rate, seven.ratePeriod], [7, 1000]);
  await q.setLimits('email');
  assert.deepStrictEqual((await q.limits()).map((l) => l.queue), ['sms']);
  assert.deepStrictEqual(await q.limits('email'), { queue: 'email', ...NONE });
});

eachStore('limits: bad values are refused and change nothing', async (t, store) => {
  const { q } = await fresh(t, store);
  await q.setLimits('email', { running: 3, rate: '50/1s' });
  const before = await q.limits();
  const cases = [
    [jobq.Invalid, "invalid running limit '0': expected 1 to 1000000000", { running: 0 }],
    [jobq.Invalid, "invalid running limit '-2'", { running: -2 }],
    [jobq.Invalid, "invalid running limit per key '1000000001'", { runningPerKey: 1000000001 }],
    [jobq.Invalid, "invalid rate 'fast': expected N/PERIOD, N from 1 to 1000000000 and PERIOD from 1ms to 1d", { rate: 'fast' }],
    [jobq.Invalid, "invalid rate '0/1s': expected N/PERIOD", { rate: '0/1s' }],
    [jobq.Invalid, "invalid rate '10/2d': expected N/PERIOD",
      { rate: '10/2d' }],
    [jobq.Invalid, "invalid rate '10/1fortnight'", { rate: '10/1fortnight' }],
    [jobq.Invalid, "invalid rate period '86400001ms': expected 1ms to 1d",
      { rate: { count: 10, period: 86400001 } }],
    [jobq.Invalid, "invalid rate period '0ms'", { rate: { count: 10, period: 0 } }],
    [jobq.Invalid, "invalid rate count '-1'", { rate: { count: -1, period: 1000 } }],
    [TypeError, "invalid running limit '5': expected an integer", { running: '5' }],
    [TypeError, "invalid rate period '1s': expected milliseconds",
      { rate: { count: 10, period: '1s' } }],
    [jobq.Invalid, "invalid rate period '9223372036854775807ms'",
      { rate: { count: 1, period: 1e30 } }],
    [TypeError, "invalid rate period 'undefined': expected milliseconds", { rate: { count: 1 } }],
    [TypeError, "invalid rate '100': expected N/PERIOD", { rate: 100 }],
    [TypeError, "unexpected limit 'concurrency'", { concurrency: 2 }],
    [jobq.Invalid, "invalid rate per key '0/1s': expected N/PERIOD", { ratePerKey: '0/1s' }],
    [jobq.Invalid, "invalid rate per key 'x/1s': expected N/PERIOD", { ratePerKey: 'x/1s' }],
    [jobq.Invalid, "invalid rate per key '5/0s': expected N/PERIOD", { ratePerKey: '5/0s' }],
    [jobq.Invalid, "invalid rate period per key '0ms'",
      { ratePerKey: { count: 5, period: 0 } }],
  ];
  for (const [cls, text, limits] of cases) {
    await assert.rejects(q.setLimits('email', limits),
      (e) => e instanceof cls && e.message.includes(text), text);
  }
  await assert.rejects(q.setLimits('Bad Queue', { running: 1 }),
    (e) => e instanceof jobq.Invalid && e.message.includes("invalid queue name 'Bad Queue'"));
  assert.deepStrictEqual(await q.limits(), before);
  assert.deepStrictEqual((await q.stats()).map((s) => s.name), ['email']);
});

eachStore('limits: a running limit holds a second session back', async (t, store) => {
  const { q, url } = await fresh(t, store);
  await q.setLimits('email', { running: 1 });
  const first = await q.put('email', 'a');
  const second = await q.put('email', 'b');
  const other = await jobq.connect(url);
  t.after(() => other.close());
  const s1 = await q.session({ lease: 30000 });
  const s2 = await other.session({ lease: 30000 });
  const [job] = await s1.claim('email');
  assert.strictEqual(job.id, first.id);
  assert.deepStrictEqual(await s2.claim('email', 10), []);
  const held = await other.limits('email');
  assert.deepStrictEqual([held.runningNow, held.held], [1, true]);
  await s1.complete(job);
  const next = await s2.claim('email', 10);
  assert.deepStrictEqual(next.map((j) => j.id), [second.id]);
  await s2.complete(next[0]);
  const after = await q.limits('email');
  assert.deepStrictEqual([after.runningNow, after.held], [0, false]);
  // Without the limit, both run at once.
  await q.setLimits('email');
  await q.putMany(['c', 'd'], { queue: 'email' });
  assert.strictEqual((await s1.claim('email')).length, 1);
  assert.strictEqual((await s2.claim('email')).length, 1);
  await s1.close();
  await s2.close();
});

eachStore('limits: a rate limit holds claims back', async (t, store) => {
  const { q } = await fresh(t, store);
  await q.setLimits('email', { rate: { count: 2, period: 3600 * 1000 } });
  await q.putMany(['a', 'b', 'c'], { queue: 'email' });
  const s = await q.session({ lease: 30000 });
  assert.strictEqual((await s.claim('email', 10)).length, 2);
  assert.deepStrictEqual(await s.claim('email', 10), []);
  const got = await q.limits('email');
  assert.deepStrictEqual([got.claimedNow, got.held], [2, true]);
  await s.close();
});

eachStore('limits: a running limit per key', async (t, store) => {
  const { q } = await fresh(t, store);
  await q.setLimits('email', { runningPerKey: 1 });
  await q.put('email', 'k1', { key: 'k' });
  await q.put('email', 'k2', { key: 'k' });
  await q.put('email', 'j1', { key: 'j' });
  const s = await q.session({ lease: 30000 });
  const jobs = await s.claim('email', 10);
  assert.deepStrictEqual(jobs.map((j) => j.key).sort(), ['j', 'k']);
  assert.deepStrictEqual(await s.claim('email', 10), []);
  await s.complete(jobs.find((j) => j.key === 'k'));
  const next = await s.claim('email', 10);
  assert.deepStrictEqual(next.map((j) => j.key), ['k']);
  await s.close();
});

eachStore('limits: a rate per key', async (t, store) => {
  const { q } = await fresh(t, store);
  await q.setLimits('email', { ratePerKey: { count: 1, period: 3600 * 1000 } });
  const first = await q.put('email', 'k1', { key: 'k' });
  await q.put('email', 'k2', { key: 'k' });
  await q.put('email', 'j1', { key: 'j' });
  const s = await q.session({ lease: 30000 });
  const jobs = await s.claim('email', 10);
  assert.deepStrictEqual(jobs.map((j) => j.key).sort(), ['j', 'k']);
  assert.strictEqual(jobs.find((j) => j.key === 'k').id, first.id);
  for (const job of jobs) await s.complete(job);
  assert.deepStrictEqual(await s.claim('email', 10), []);
  const got = await q.limits('email');
  assert.deepStrictEqual([got.keysFullNow, got.held], [2, true]);
  await s.close();
});
