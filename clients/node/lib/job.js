'use strict';
// job.js - what a handler sees and says: the Job it is given (id, queue,
// attempt, prevLost, claim token, key, payload), the Retry and Fail it may
// throw, and how values become bytes (payloads, results) and times become
// milliseconds.  Shared by the persistent worker, the in-process worker and
// the testing mode; needs no library.

// Throw in a handler to run the job again later: after options.delay
// milliseconds, or after the job's backoff when there is none.  It spends
// an attempt, like a failure, but is recorded as a requested retry with
// reason as its note, not as an error.
class Retry extends Error {
  constructor(reason = '', options = {}) {
    super(reason);
    this.name = 'Retry';
    this.reason = String(reason);
    this.delay = options.delay === undefined ? null : options.delay;
  }
}

// Throw in a handler to fail the job with message as its error, without a
// stack.  The job is retried with its backoff while attempts remain, then
// dead, as for any other error.
class Fail extends Error {
  constructor(message) {
    super(message);
    this.name = 'Fail';
  }
}

// One claimed job, as a handler gets it.
class Job {
  constructor(fields) {
    this.id = fields.id;
    this.queue = fields.queue;
    this.payload = fields.payload || Buffer.alloc(0);
    this.attempt = fields.attempt ?? 1;
    this.maxAttempts = fields.maxAttempts ?? 25;
    this.prevLost = Boolean(fields.prevLost);
    this.claim = fields.claim ?? '0'.repeat(32);
    this.key = fields.key ?? null;
    this.priority = fields.priority ?? 0;
    this.timeout = fields.timeout ?? null;
    // Aborted when an operator cancels the job (in-process workers only).
    this.signal = fields.signal ?? new AbortController().signal;
  }

  // The payload as UTF-8 text.
  get text() {
    return this.payload.toString('utf8');
  }

  // The payload parsed as JSON.
  json() {
    return JSON.parse(this.payload.toString('utf8'));
  }
}

// A payload or result as a Buffer: bytes as they are, a string as UTF-8,
// null and undefined as nothing, anything else as JSON.
function toBuffer(value, what = 'payload') {
  if (value === null || value === undefined) return Buffer.alloc(0);
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  let json;
  try {
    json = JSON.stringify(value);
  } catch (e) {
    throw new TypeError(`invalid ${what}: expected a Buffer, a string, null or a value ` +
      `JSON can encode (${e.message})`);
  }
  if (json === undefined) {
    throw new TypeError(`invalid ${what} (${typeof value}): expected a Buffer, a string, ` +
      'null or a value JSON can encode');
  }
  return Buffer.from(json, 'utf8');
}

// A duration in milliseconds (a finite number); null and undefined stay null.
function toMs(value, what) {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new TypeError(`invalid ${what} '${String(value)}': expected milliseconds (a number)`);
  }
  return Math.round(value);
}

// A point in time (a Date, or Unix milliseconds) in Unix milliseconds.
function atMs(value) {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.getTime();
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new TypeError(`invalid at '${String(value)}': expected a Date or Unix milliseconds`);
  }
  return Math.round(value);
}

// Unix milliseconds as a Date; 0 as null.
function fromMs(ms) {
  return ms ? new Date(Number(ms)) : null;
}

module.exports = { Job, Retry, Fail, toBuffer, toMs, atMs, fromMs };
