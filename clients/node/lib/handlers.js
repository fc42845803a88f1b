'use strict';
// handlers.js - the handler registry (jobq.handle('email', async job => ...))
// and running one job through its handler into an outcome: done with a
// result, failed with an error, or a requested retry.  The persistent
// worker, the in-process worker and the testing mode all run jobs through
// run() here, so a handler behaves the same under each.

const util = require('util');
const { Fail, Retry, toBuffer, toMs } = require('./job');

// What became of one run of a job: state 'done' (result: a Buffer),
// 'failed' (error: a string) or 'retry' (delay: milliseconds, or null for
// the job's backoff; reason: a string).
class Outcome {
  constructor(state, fields = {}) {
    this.state = state;
    this.result = fields.result || Buffer.alloc(0);
    this.error = fields.error || '';
    this.delay = fields.delay ?? null;
    this.reason = fields.reason || '';
  }

  get text() {
    return this.result.toString('utf8');
  }

  json() {
    return JSON.parse(this.result.toString('utf8'));
  }
}

// Handlers by queue name; the one registered without a queue (null) takes
// the jobs of every other queue.
class Registry {
  constructor() {
    this.byQueue = new Map();
  }

  register(queues, fn) {
    for (const q of queues) {
      const old = this.byQueue.get(q);
      if (old !== undefined && old !== fn) {
        const where = q === null ? 'every other queue' : `queue '${q}'`;
        throw new Error(`a handler for ${where} is already registered: ${old.name || 'anonymous'}`);
      }
    }
    for (const q of queues) this.byQueue.set(q, fn);
  }

  find(queue) {
    return this.byQueue.get(queue) || this.byQueue.get(null) || null;
  }

  // The queue names with a handler of their own; null when one handler
  // takes every queue.
  queues() {
    if (this.byQueue.has(null)) return null;
    return [...this.byQueue.keys()].sort();
  }

  clear() {
    this.byQueue.clear();
  }

  get size() {
    return this.byQueue.size;
  }
}

const registry = new Registry();

// Registers fn as the handler of queue (a name, an array of names, or null
// for every queue without a handler of its own):
//
//   jobq.handle('email', async job => { ...; return result; });
//
// What fn returns (or resolves to) is the result: a Buffer, a string, null
// or anything JSON can encode.
function handle(queue, fn, reg = registry) {
  if (typeof fn !== 'function') {
    throw new TypeError('invalid handler: expected a function of the job');
  }
  const queues = queue === null || queue === undefined ? [null]
    : (Array.isArray(queue) ? queue : [queue]);
  for (const q of queues) {
    if (q !== null && (typeof q !== 'string' || q === '')) {
      throw new TypeError(`invalid queue ${util.inspect(q)}: expected a queue name`);
    }
  }
  reg.register(queues, fn);
  return fn;
}

// Runs job through its handler and resolves with the Outcome; never rejects
// for what the handler does.
async function run(job, reg = registry) {
  const fn = reg.find(job.queue);
  if (fn === null) {
    const known = reg.queues();
    return new Outcome('failed', {
      error: `no handler for queue '${job.queue}': this worker has handlers for ` +
        `${known && known.length ? known.join(', ') : 'none'}`,
    });
  }
  try {
    const value = await fn(job);
    return new Outcome('done', { result: toBuffer(value, 'result') });
  } catch (e) {
    if (e instanceof Retry) {
      let delay;
      try {
        delay = toMs(e.delay, 'retry delay');
      } catch (bad) {
        return new Outcome('failed', { error: bad.message });
      }
      return new Outcome('retry', { delay: delay === null ? null : Math.max(0, delay),
        reason: e.reason });
    }
    if (e instanceof Fail) return new Outcome('failed', { error: e.message });
    return new Outcome('failed', {
      error: e instanceof Error ? String(e.stack || e) : util.inspect(e),
    });
  }
}

module.exports = { Outcome, Registry, registry, handle, run };
