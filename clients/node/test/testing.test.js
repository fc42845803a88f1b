'use strict';
// testing.test.js - jobq.testing: perform() runs a handler inline with no
// database; queue() and drain() run jobs from a temporary SQLite queue
// through the handlers, and the queue's folder is gone afterwards.

const assert = require('assert');
const fs = require('fs');
const path = require('path');
const test = require('node:test');
require('./support');
const jobq = require('..');

function registry(signupUrl) {
  const r = new jobq.Registry();
  jobq.handle('email', async (job) => {
    const { to } = job.json();
    if (to === 'nobody') throw new jobq.Fail('no address');
    if (to === 'later') {
      throw job.attempt === 1 ? new jobq.Retry('mailbox full', { delay: 50 }) : new jobq.Retry();
    }
    if (to === 'crash') throw new TypeError(`cannot send to ${to}`);
    return { sent: to, attempt: job.attempt };
  }, r);
  jobq.handle('signup', async (job) => {
    // A handler that puts more work: the test's queue holds it too.
    const q = await jobq.connect(signupUrl());
    await q.put('email', { to: job.text });
    await q.close();
    return 'welcomed';
  }, r);
  return r;
}

test('perform runs a handler inline', async () => {
  const r = registry();
  let out = await jobq.testing.perform('email', { to: 'ada' }, { registry: r });
  assert.deepStrictEqual([out.state, out.json()], ['done', { sent: 'ada', attempt: 1 }]);
  out = await jobq.testing.perform('email', { to: 'ada' }, { attempt: 3, registry: r });
  assert.strictEqual(out.json().attempt, 3);
  out = await jobq.testing.perform('email', { to: 'nobody' }, { registry: r });
  assert.deepStrictEqual([out.state, out.error], ['failed', 'no address']);
  out = await jobq.testing.perform('email', { to: 'later' }, { registry: r });
  assert.deepStrictEqual([out.state, out.delay, out.reason], ['retry', 50, 'mailbox full']);
  out = await jobq.testing.perform('email', { to: 'later' }, { attempt: 2, registry: r });
  assert.deepStrictEqual([out.state, out.delay], ['retry', null]);
  out = await jobq.testing.perform('email', { to: 'crash' }, { registry: r });
  assert.strictEqual(out.state, 'failed');
  assert.match(out.error, /TypeError: cannot send to crash/);
  out = await jobq.testing.perform('sms', 'x', { registry: r });
  assert.match(out.error, /no handler for queue 'sms'/);
});

test('the default registry', async () => {
  jobq.handle('jqcl-testing-default', (job) => job.text.toUpperCase());
  assert.strictEqual((await jobq.testing.perform('jqcl-testing-default', 'hi')).text, 'HI');
  assert.throws(() => jobq.handle('jqcl-testing-default', () => null), /already registered/);
});

test('drain runs what is ready', async () => {
  let url = null;
  const r = registry(() => url);
  const q = await jobq.testing.queue();
  url = q.url;
  const dir = path.dirname(q.url.slice('sqlite:'.length));
  await q.put('signup', 'ada');
  await q.put('email', { to: 'later' }, { backoff: 3600000 });
  const counts = await jobq.testing.drain(q, { registry: r });
  assert.deepStrictEqual(counts, { done: 2, failed: 0, retry: 1, lost: 0 });
  const stats = Object.fromEntries((await q.stats()).map((s) => [s.name, s]));
  assert.deepStrictEqual([stats.signup.done, stats.email.done, stats.email.scheduled], [1, 1, 1]);
  const [later] = await q.ls({ state: 'scheduled' });
  assert.strictEqual(later.lastError, 'mailbox full');
  await q.close();
  assert.strictEqual(fs.existsSync(dir), false);
});

test('drain with scheduled waits for retries', async () => {
  const r = registry();
  const q = await jobq.testing.queue();
  const { id } = await q.put('email', { to: 'later' }, { backoff: 50, maxAttempts: 3 });
  const counts = await jobq.testing.drain(q, { scheduled: true, registry: r });
  assert.strictEqual(counts.retry, 3);
  assert.strictEqual((await q.show(id)).state, 'dead');
  await q.close();
});
