'use strict';
// testing.js - jobq in an application's tests, two ways.
//
// Inline: perform() runs a queue's registered handler on a job made up on
// the spot, with no database, and resolves with its Outcome:
//
//   const out = await jobq.testing.perform('email', { to: 'ada' });
//   assert.deepStrictEqual(out.json(), { sent: true });
//
// From a temporary queue: queue() resolves with a Client on a fresh SQLite
// file whose close() also deletes it; the code under test puts jobs there,
// and drain() runs them through the handlers in this process, as a worker
// would (claims, acknowledgements, retries, ordering keys and all).

const fs = require('fs');
const os = require('os');
const path = require('path');
const { connect } = require('./client');
const { registry: defaultRegistry, run } = require('./handlers');
const { Worker } = require('./worker');
const { Job, toBuffer } = require('./job');

// Runs queue's handler once on a job with payload; resolves with the
// Outcome (state 'done', 'failed' or 'retry').  fields set the job's other
// attributes: id, attempt, maxAttempts, prevLost, claim, key, priority,
// timeout, signal; registry picks the handlers (default: jobq.handle's).
function perform(queue, payload, fields = {}) {
  const { registry, ...rest } = fields;
  const job = new Job({ id: 1, ...rest, queue, payload: toBuffer(payload) });
  return run(job, registry || defaultRegistry);
}

// A Client on a new SQLite queue file in a temporary folder; its close()
// removes the folder.
async function queue() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jobq-test-'));
  let client;
  try {
    client = await connect(`sqlite:${path.join(dir, 'queue.db')}`);
  } catch (e) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const close = client.close.bind(client);
  client.close = async () => {
    await close();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  return client;
}

// Works the jobs of client's database through the registered handlers
// until no job is ready and none runs; with scheduled, until nothing is
// ready, scheduled (delays, retries' backoff) or waiting either.  Resolves
// with the counts of outcomes ({ done, failed, retry, lost }).
function drain(client, { queues = null, concurrency = 1, scheduled = false, registry = null } = {}) {
  const worker = new Worker({ url: client.url, queues, concurrency, name: 'jobq.testing',
    poll: 50, registry, handleSignals: false });
  return worker.run({ until: scheduled ? 'empty' : 'idle' });
}

module.exports = { perform, queue, drain };
