'use strict';
// client.js - jobq.connect(url) and the Client it resolves to: put and
// putMany, inspection (stats, show, ls, sessions, identity),
// administration (cancel, retry, pause, resume, setLimits, limits),
// transactions with the application's own SQL on SQLite, and the worker's
// Session (claim, heartbeat, complete, fail, retryLater, release, extend).
// Every method returns a promise.
//
// A Client is one libjobq handle.  The library lets a handle be used by one
// thread at a time, and each call runs on a thread of libuv's pool; so a
// client's calls take turns, in the order they were made.  A transaction
// holds the client from begin to commit: calls made inside its callback
// (they are told apart by AsyncLocalStorage) take turns among themselves,
// and everyone else's wait for the commit, so no other put lands in it.

const { AsyncLocalStorage } = require('async_hooks');
const native = require('./native');
const errors = require('./errors');
const { Job, toBuffer, toMs, atMs, fromMs } = require('./job');

const inTransaction = new AsyncLocalStorage();
const noop = () => {};
const INT_MAX = 2 ** 31 - 1;

const ACK = { complete: 1, fail: 2, retry: 3, release: 4 };
const PUT_OPTIONS = ['queue', 'key', 'unique', 'priority', 'delay', 'at', 'maxAttempts',
  'timeout', 'backoff', 'barrier', 'after', 'afterAnyOutcome', 'afterIndex'];

// One job of a putMany() with options of its own:
//
//   await q.putMany([{ to: 'ada' }, new jobq.Put({ to: 'bob' }, { key: 'bob', queue: 'vip' })],
//     { queue: 'email' });
class Put {
  constructor(payload, options = {}) {
    for (const name of Object.keys(options)) {
      if (!PUT_OPTIONS.includes(name)) {
        throw new TypeError(`unexpected option '${name}': expected one of ${PUT_OPTIONS.join(', ')}`);
      }
    }
    this.payload = payload;
    this.options = options;
  }
}

function cInt(value, what) {
  if (!Number.isInteger(value)) {
    throw new TypeError(`invalid ${what} '${String(value)}': expected an integer`);
  }
  if (value < -INT_MAX - 1 || value > INT_MAX) {
    throw new errors.Invalid(`invalid ${what} '${value}': out of range`);
  }
  return value;
}

function cString(value, what) {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'string') {
    throw new TypeError(`invalid ${what} '${String(value)}': expected a string`);
  }
  return value;
}

// A count limit (null or undefined: no limit) for jobq_limits, where 0 is
// none.
function limitCount(value, what) {
  if (value === null || value === undefined) return 0;
  if (!Number.isInteger(value)) {
    throw new TypeError(`invalid ${what} '${String(value)}': expected an integer or null`);
  }
  if (value < 1 || value > native.LIMIT_MAX) {
    throw new errors.Invalid(`invalid ${what} '${value}': expected 1 to ${native.LIMIT_MAX}, ` +
      'or null for no limit');
  }
  return value;
}

// rate ('100/1s', '10/m', or { count, period } with period in
// milliseconds) as [count, period in ms]; the range of a period in
// milliseconds is the library's to check; what names it in messages.
function limitRate(N, rate, what = 'rate') {
  if (typeof rate === 'object' && !Array.isArray(rate)) {
    for (const name of Object.keys(rate)) {
      if (name !== 'count' && name !== 'period') {
        throw new TypeError(`unexpected ${what} field '${name}': expected count and period`);
      }
    }
    const period = toMs(rate.period, `${what} period`);
    if (period === null) {
      throw new TypeError(`invalid ${what} period '${String(rate.period)}': expected ` +
        'milliseconds (a number)');
    }
    return [limitCount(rate.count, `${what} count`), period];
  }
  if (typeof rate !== 'string') {
    throw new TypeError(`invalid ${what} '${String(rate)}': expected N/PERIOD like '100/1s', ` +
      '{ count, period } or null');
  }
  const count = [0];
  const ms = [0];
  if (N.fn.jobq_parse_rate(rate, count, ms) < 0) {
    throw new errors.Invalid(`invalid ${what} '${rate}': expected N/PERIOD, N from 1 to ` +
      `${native.LIMIT_MAX} and PERIOD from 1ms to 1d, like 100/1s or 10/1m`);
  }
  return [Number(count[0]), Number(ms[0])];
}

function queueLimits(c) {
  return {
    queue: c.queue,
    running: Number(c.running) || null,
    rate: Number(c.rate) || null,
    ratePeriod: Number(c.rate) ? Number(c.rate_period_ms) : null,
    runningPerKey: Number(c.running_per_key) || null,
    ratePerKey: Number(c.rate_per_key) || null,
    ratePerKeyPeriod: Number(c.rate_per_key) ? Number(c.rate_per_key_period_ms) : null,
    runningNow: Number(c.running_now),
    claimedNow: Number(c.claimed_now),
    keysFullNow: Number(c.keys_full_now),
    held: Boolean(c.held),
  };
}

const LIMIT_OPTIONS = ['running', 'rate', 'runningPerKey', 'ratePerKey'];

// A jobq_limits with every field 0 but those of fields.
const noLimits = (fields) => ({ queue: null, running: 0, rate: 0, rate_period_ms: 0,
  running_per_key: 0, rate_per_key: 0, rate_per_key_period_ms: 0, running_now: 0,
  claimed_now: 0, keys_full_now: 0, held: 0, ...fields });

let putDefaults = null;

// The jobq_put_opts of one job (a plain object for koffi); keep holds the
// buffers it points to until the call returns.
function putOpts(queue, payload, opts = {}) {
  const N = native.load();
  if (putDefaults === null) {
    putDefaults = {};
    N.fn.jobq_put_opts_init(putDefaults);
  }
  const names = PUT_OPTIONS.filter((n) => n !== 'queue');
  for (const name of Object.keys(opts)) {
    if (!names.includes(name)) {
      throw new TypeError(`unexpected option '${name}': expected one of ${names.join(', ')}`);
    }
  }
  const data = toBuffer(payload);
  const o = { ...putDefaults, payload: data.length ? data : null, payload_len: data.length };
  o.queue = cString(queue, 'queue');
  o.key = cString(opts.key, 'key');
  o.unique_key = cString(opts.unique, 'unique key');
  if (opts.priority !== undefined) o.priority = cInt(opts.priority, 'priority');
  if (opts.delay != null) o.delay_ms = toMs(opts.delay, 'delay');
  if (opts.at != null) o.run_at_ms = atMs(opts.at);
  if (opts.maxAttempts !== undefined) o.max_attempts = cInt(opts.maxAttempts, 'maxAttempts');
  if (opts.timeout != null) o.timeout_ms = toMs(opts.timeout, 'timeout');
  if (opts.backoff != null) o.backoff_ms = toMs(opts.backoff, 'backoff');
  o.barrier = opts.barrier ? 1 : 0;
  const after = ints(opts.after, 'after');
  const places = ints(opts.afterIndex, 'afterIndex');
  o.after = after.length ? BigInt64Array.from(after, BigInt) : null;
  o.n_after = after.length;
  o.after_index = places.length ? BigUint64Array.from(places, BigInt) : null;
  o.n_after_index = places.length;
  o.after_any_outcome = opts.afterAnyOutcome ? 1 : 0;
  return o;
}

// The integers of a list option (after, afterIndex): [] when absent.
function ints(value, what) {
  if (value === null || value === undefined) return [];
  if (!Array.isArray(value) || !value.every((v) => Number.isSafeInteger(v) && v >= 0)) {
    throw new TypeError(`invalid ${what} '${String(value)}': expected an array of integers`);
  }
  return value;
}

function jobInfo(N, c, withData) {
  return {
    id: Number(c.id),
    queue: c.queue,
    state: N.fn.jobq_state_name(c.state),
    priority: c.priority,
    runAt: fromMs(c.run_at_ms),
    key: c.key,
    barrier: Boolean(c.barrier),
    uniqueKey: c.unique_key,
    payload: withData ? native.bytesAt(c.payload, c.payload_len) : null,
    result: withData && c.result ? native.bytesAt(c.result, c.result_len) : null,
    attempts: c.attempts,
    maxAttempts: c.max_attempts,
    timeout: c.timeout_ms ? Number(c.timeout_ms) : null,
    backoff: Number(c.backoff_ms),
    session: c.session,
    claim: c.claim,
    createdAt: fromMs(c.created_at_ms),
    claimedAt: fromMs(c.claimed_at_ms),
    finishedAt: fromMs(c.finished_at_ms),
    lastError: c.last_error,
    cancelRequested: Boolean(c.cancel_requested),
    prevLost: Boolean(c.prev_lost),
  };
}

// Opens the queue database named by url (default: $JOBQ_DB, else
// 'sqlite:jobq.db'); resolves with a Client.  An SQLite file is made and
// initialised when missing; a server database needs `jobq init` (or
// client.init()) once.
async function connect(url) {
  const client = new Client(url);
  await client._open();
  return client;
}

class Client {
  constructor(url) {
    if (url === undefined || url === null) url = process.env.JOBQ_DB || 'sqlite:jobq.db';
    if (typeof url !== 'string') {
      throw new TypeError(`invalid url '${String(url)}': expected a database URL`);
    }
    this.N = native.load();
    this.url = url;
    const red = this.N.fn.jobq_url_redact(url);
    this.redactedUrl = red ? this.N.koffi.decode.string(red) : '***';
    this.N.fn.jobq_free(red);
    this._db = null;
    this._sessions = new Set();
    this._tail = Promise.resolve();
    this._txTail = Promise.resolve();
  }

  async _open() {
    const out = [null];
    const rc = await native.callAsync(this.N.fn.jobq_open, [this.url, out]);
    this._db = out[0];
    if (rc < 0) {
      const err = this._error(rc);
      this.N.fn.jobq_close(this._db);
      this._db = null;
      throw err;
    }
    this.warning = this.N.fn.jobq_warning(this._db);
  }

  _error(rc) {
    const fn = this.N.fn;
    const msg = (this._db && fn.jobq_errmsg(this._db)) || fn.jobq_strerror(rc);
    return errors.fromCode(rc, msg, fn.jobq_err_name(rc));
  }

  // Runs fn() in the client's turn.
  _turn(fn) {
    const store = inTransaction.getStore();
    const tx = store !== undefined && store.client === this && store.open;
    const p = (tx ? this._txTail : this._tail).then(fn);
    if (tx) this._txTail = p.then(noop, noop);
    else this._tail = p.then(noop, noop);
    return p;
  }

  // Calls the library function name(handle, ...args) in the client's turn
  // on the thread pool; rejects with the error class of a negative return.
  _call(name, ...args) {
    return this._turn(() => this._now(name, this._db, args));
  }

  async _now(name, handle, args) {
    if (!this._db) throw new errors.WrongState('the jobq client is closed');
    const rc = await native.callAsync(this.N.fn[name], [handle, ...args]);
    if (rc < 0) throw this._error(rc);
    return rc;
  }

  // Closes the handle (rolling back an open transaction) once the calls
  // already made are done, and the sessions still open on it first.
  close() {
    return this._turn(() => {
      for (const s of this._sessions) s._end();
      this._sessions.clear();
      if (this._db) {
        this.N.fn.jobq_close(this._db);
        this._db = null;
      }
    });
  }

  // Creates or migrates jobq's tables (`jobq init`).
  async init() {
    await this._call('jobq_init');
  }

  // Enqueues one job; resolves with { id, existed }: existed is true when a
  // job with this unique key was already there (then nothing was written
  // and id is its id).
  async put(queue, payload, opts = {}) {
    const o = putOpts(queue, payload, opts);
    const id = [0];
    const existed = [0];
    await this._call('jobq_put', o, id, existed);
    return { id: Number(id[0]), existed: Boolean(existed[0]) };
  }

  // Enqueues many jobs in one transaction: all or none.  Each item is a
  // payload, or a jobq.Put (a payload with options of its own); defaults
  // (queue and put()'s other options) apply to every item.  An error names
  // the index of the bad job ('job 7: ...').
  async putMany(items, defaults = {}) {
    const all = [...items];
    if (all.length === 0) return [];
    const { queue = null, ...common } = defaults;
    const opts = all.map((item, i) => {
      const own = item instanceof Put ? item : new Put(item);
      const { queue: q = queue, ...rest } = { ...common, ...own.options };
      try {
        return putOpts(q, own.payload, rest);
      } catch (e) {
        e.message = `job ${i}: ${e.message}`;
        throw e;
      }
    });
    const ids = new Array(all.length).fill(0);
    const existed = new Uint8Array(all.length);
    await this._call('jobq_put_many', opts, all.length, ids, existed);
    return ids.map((id, i) => ({ id: Number(id), existed: Boolean(existed[i]) }));
  }

  // Runs fn(client) in one transaction: the puts, acknowledgements and
  // (on SQLite) execute() calls it makes commit together when the promise
  // it returns resolves, or not at all when it rejects.  Resolves with
  // fn's value.
  transaction(fn) {
    const tx = { client: this, open: true };
    return this._turn(() => inTransaction.run(tx, async () => {
      try {
        await this._now('jobq_begin', this._db, []);
        let value;
        try {
          value = await fn(this);
          await this._txTail;
        } catch (e) {
          await this._txTail;
          await native.callAsync(this.N.fn.jobq_rollback, [this._db]);
          throw e;
        }
        await this._now('jobq_commit', this._db, []);
        return value;
      } finally {
        // Calls that the callback started but did not wait for, made
        // after this, take their turn with everyone else's.
        tx.open = false;
      }
    }));
  }

  // Runs one SQL statement on the client's own SQLite connection (in the
  // open transaction, if any); resolves with its rows as arrays.  params:
  // an array for ? placeholders, or an object for :name ones.  SQLite
  // only: on PostgreSQL, use jobq.pg.put() on your own connection.
  execute(sql, params = []) {
    const scheme = this.url.split(':', 1)[0];
    if (scheme !== 'sqlite' && scheme !== 'sqlite3') {
      return Promise.reject(new errors.NotSupported(`execute() runs SQL on an SQLite queue ` +
        `database only, not on '${this.redactedUrl}': on PostgreSQL, enqueue in your own ` +
        'transaction with jobq.pg.put(client, ...)'));
    }
    return this._turn(() => {
      if (!this._db) throw new errors.WrongState('the jobq client is closed');
      return require('./sqlite').execute(this.N.fn.jobq_native(this._db), sql, params);
    });
  }

  // Per-queue counts: [{ name, ready, scheduled, waiting, pending, running,
  // done, dead, cancelled, paused, oldestReady (ms), keyPolicy }].
  async stats() {
    const out = [null];
    const n = [0];
    return this._turn(async () => {
      await this._now('jobq_stats', this._db, [out, n]);
      try {
        const rows = n[0] ? this.N.koffi.decode(out[0], this.N.types.jobq_queue_stats, n[0]) : [];
        return rows.map((s) => ({
          name: s.name, ready: Number(s.ready), scheduled: Number(s.scheduled),
          waiting: Number(s.waiting), pending: Number(s.pending), running: Number(s.running),
          done: Number(s.done),
          dead: Number(s.dead), cancelled: Number(s.cancelled), paused: Boolean(s.paused),
          oldestReady: Number(s.oldest_ready_ms), keyPolicy: s.key_policy,
        }));
      } finally {
        this.N.fn.jobq_stats_free(out[0], n[0]);
      }
    });
  }

  // One job, unfinished or archived; rejects with NotFound when there is
  // none.  Times are Dates, durations milliseconds.
  async show(id) {
    const out = [null];
    return this._turn(async () => {
      await this._now('jobq_show', this._db, [id, out]);
      try {
        return jobInfo(this.N, this.N.koffi.decode(out[0], this.N.types.jobq_job_info), true);
      } finally {
        this.N.fn.jobq_info_free(out[0], 1);
      }
    });
  }

  // Jobs by id (payload and result left out), at most limit of them with
  // ids above after.  state: 'ready', 'scheduled', 'running', 'waiting',
  // 'done', 'dead', 'cancelled', or none for all.
  async ls({ queue = null, state = null, limit = 100, after = 0 } = {}) {
    const o = { queue: cString(queue, 'queue'), state: 0, scheduled: 0, limit, after_id: after };
    if (state !== null && state !== undefined) {
      o.state = this.N.fn.jobq_state_parse(String(state));
      if (o.state === 0) {
        throw new errors.Invalid(`invalid state '${state}': expected ready, scheduled, ` +
          'running, waiting, pending, done, dead or cancelled');
      }
      o.scheduled = state === 'scheduled' ? 1 : 0;
    }
    const out = [null];
    const n = [0];
    return this._turn(async () => {
      await this._now('jobq_list', this._db, [o, out, n]);
      try {
        const rows = n[0] ? this.N.koffi.decode(out[0], this.N.types.jobq_job_info, n[0]) : [];
        return rows.map((c) => jobInfo(this.N, c, false));
      } finally {
        this.N.fn.jobq_info_free(out[0], n[0]);
      }
    });
  }

  // The live (and expired, not yet reaped) sessions.
  async sessions() {
    const out = [null];
    const n = [0];
    return this._turn(async () => {
      await this._now('jobq_sessions', this._db, [out, n]);
      try {
        const rows = n[0] ? this.N.koffi.decode(out[0], this.N.types.jobq_session_info, n[0]) : [];
        return rows.map((s) => ({
          id: s.id, name: s.name, host: s.host, pid: Number(s.pid), epoch: Number(s.epoch),
          startedAt: fromMs(s.started_at_ms), heartbeatAt: fromMs(s.heartbeat_at_ms),
          expiresAt: fromMs(s.expires_at_ms), lease: Number(s.lease_ms),
          claimed: Number(s.claimed), inFlight: Number(s.in_flight), done: Number(s.done),
          failed: Number(s.failed), expired: Boolean(s.expired),
        }));
      } finally {
        this.N.fn.jobq_sessions_free(out[0], n[0]);
      }
    });
  }

  // The database's identity: { queueId, epoch, seq, schemaVersion, now }.
  async identity() {
    const i = {};
    await this._call('jobq_identity_get', i);
    return { queueId: i.queue_id, epoch: Number(i.epoch), seq: Number(i.seq),
      schemaVersion: i.schema_version, now: fromMs(i.now_ms) };
  }

  // Cancels a job: true when it was cancelled at once (ready or waiting),
  // false when it is running and its worker was asked to stop it.
  async cancel(id) {
    const now = [0];
    await this._call('jobq_cancel', id, now);
    return Boolean(now[0]);
  }

  // Puts a dead or cancelled job back to run, with fresh attempts.
  async retry(id) {
    await this._call('jobq_retry', id);
  }

  // Retries every dead job (of queue, or of all); resolves with how many.
  async retryDead(queue = null) {
    const count = [0];
    await this._call('jobq_retry_dead', cString(queue, 'queue'), count);
    return Number(count[0]);
  }

  async pause(queue) {
    await this._call('jobq_pause', cString(queue, 'queue'));
  }

  async resume(queue) {
    await this._call('jobq_resume', cString(queue, 'queue'));
  }

  // Sets queue's limits, across every worker and machine, in place of
  // those it had (none given removes them):
  //
  //   await q.setLimits('email', { running: 5, rate: '100/1m' });
  //
  // running: at most this many of its jobs claimed at once.  rate: at most
  // N claimed in any period of the database clock, as 'N/PERIOD' ('100/1s',
  // '10/5m', up to a day) or { count, period } (milliseconds).
  // runningPerKey: at most this many of one ordering key (the queue's keys
  // then limit and no longer order).  ratePerKey: at most N of one
  // ordering key claimed in any period, written as rate is (keys still
  // order; jobs without a key are not counted).  Counts run from 1 to
  // 1000000000.  On an error nothing is changed.
  async setLimits(queue, limits = {}) {
    if (typeof queue !== 'string') {
      throw new TypeError(`invalid queue '${String(queue)}': expected a queue name`);
    }
    for (const name of Object.keys(limits)) {
      if (!LIMIT_OPTIONS.includes(name)) {
        throw new TypeError(`unexpected limit '${name}': expected one of ` +
          LIMIT_OPTIONS.join(', '));
      }
    }
    const c = noLimits({ running: limitCount(limits.running, 'running limit'),
      running_per_key: limitCount(limits.runningPerKey, 'running limit per key') });
    if (limits.rate !== null && limits.rate !== undefined) {
      [c.rate, c.rate_period_ms] = limitRate(this.N, limits.rate);
    }
    if (limits.ratePerKey !== null && limits.ratePerKey !== undefined) {
      [c.rate_per_key, c.rate_per_key_period_ms] = limitRate(this.N, limits.ratePerKey,
        'rate per key');
    }
    await this._call('jobq_set_limits', queue, c);
  }

  // The limits of every queue that has one, by name: [{ queue, running,
  // rate, ratePeriod (ms), runningPerKey, ratePerKey, ratePerKeyPeriod
  // (ms), runningNow, claimedNow, keysFullNow, held }],
  // each limit null when not set; or, given a queue, that queue's (its
  // limits null when it has none).
  async limits(queue = null) {
    const name = cString(queue, 'queue');
    const out = [null];
    const n = [0];
    const found = await this._turn(async () => {
      await this._now('jobq_limits_list', this._db, [name, out, n]);
      try {
        const rows = n[0] ? this.N.koffi.decode(out[0], this.N.types.jobq_limits, n[0]) : [];
        return rows.map(queueLimits);
      } finally {
        this.N.fn.jobq_limits_free(out[0], n[0]);
      }
    });
    if (name === null) return found;
    return found.length ? found[0] : queueLimits(noLimits({ queue: name }));
  }

  // Opens a worker session (claims, acknowledgements, heartbeats) with a
  // lease in milliseconds.  Most programs want jobq.Worker, which does all
  // of it.
  async session({ name = 'node', lease = 5000 } = {}) {
    const s = new Session(this);
    await s._open(String(name), toMs(lease, 'lease'));
    return s;
  }

  // Starts watching for changes (false when the store cannot); changed()
  // then says whether another connection committed since the last call.
  async _watch(queues) {
    try {
      await this._call('jobq_watch', [0]);
    } catch (e) {
      if (e instanceof errors.NotSupported) return false;
      throw e;
    }
    if (queues && queues.length) {
      try {
        await this._call('jobq_watch_queues', queues, queues.length);
      } catch (e) {
        if (!(e instanceof errors.NotSupported)) throw e;
      }
    }
    return true;
  }

  async _changed() {
    return (await this._call('jobq_changed')) === 1;
  }
}

// The jobq_job of a Job, for the calls that acknowledge it.
function cJob(job) {
  return {
    id: job.id, queue: job.queue, payload: null, payload_len: 0, attempt: job.attempt,
    max_attempts: job.maxAttempts, priority: job.priority, key: job.key, timeout_ms: 0,
    prev_lost: job.prevLost ? 1 : 0, claimed_at_ms: 0, claim: job.claim,
  };
}

// A jobq_ack for jobq_ack_many()/jobq_ack_claim().
function ack(job, kind, data, retryInMs) {
  const buf = data && data.length ? data : null;
  return { id: job.id, claim: job.claim, kind: ACK[kind], data: buf, len: buf ? buf.length : 0,
    retry_in_ms: retryInMs === null || retryInMs === undefined ? -1 : retryInMs,
    status: 0, already: 0, outcome: 0 };
}

// A worker session on a Client: its lease is kept by heartbeat(), its
// claims are fenced by their claim tokens.  Close it: the jobs it still
// holds go back to ready at once.
class Session {
  constructor(client) {
    this.client = client;
    this._s = null;
  }

  async _open(name, leaseMs) {
    const c = this.client;
    const N = c.N;
    const o = {};
    N.fn.jobq_session_opts_init(o);
    o.name = name;
    if (leaseMs !== null) o.lease_ms = leaseMs;
    const out = [null];
    await c._turn(async () => {
      if (!c._db) throw new errors.WrongState('the jobq client is closed');
      const rc = await native.callAsync(N.fn.jobq_session_open, [c._db, o, out]);
      if (rc < 0) {
        N.fn.jobq_session_close(out[0]);
        throw c._error(rc);
      }
      this._s = out[0];
      c._sessions.add(this);
      this.id = N.fn.jobq_session_id(this._s);
      this.lease = Number(N.fn.jobq_session_lease_ms(this._s));
    });
  }

  _call(name, ...args) {
    const c = this.client;
    return c._turn(() => {
      if (!this._s) throw new errors.WrongState('the session is closed');
      return c._now(name, this._s, args);
    });
  }

  // Ends the session: the jobs it still holds go back to ready at once.
  close() {
    return this.client._turn(() => {
      if (!this._s) return undefined;
      const s = this._s;
      this._s = null;
      this.client._sessions.delete(this);
      return native.callAsync(this.client.N.fn.jobq_session_close, [s]);
    });
  }

  // Ends the session now, in the client's turn (its close()).
  _end() {
    if (this._s) this.client.N.fn.jobq_session_close(this._s);
    this._s = null;
  }

  // Claims up to max ready jobs of queues (a name, an array, or null for
  // every queue); resolves with Jobs.  Rejects with Identity when the
  // database is not the one this client saw, Expired when the session is
  // gone.
  claim(queues = null, max = 1) {
    return this._ackClaim([], queues, max);
  }

  // Acknowledges acks (jobq_ack objects) and claims up to max more, in one
  // transaction; the acks' status fields are filled in.
  async _ackClaim(acks, queues, max) {
    const qs = queues === null || queues === undefined ? null
      : (Array.isArray(queues) ? queues : [queues]);
    const out = [null];
    const n = [0];
    const N = this.client.N;
    return this.client._turn(async () => {
      if (!this._s) throw new errors.WrongState('the session is closed');
      if (acks.length) {
        await this.client._now('jobq_ack_claim', this._s,
          [acks, acks.length, qs, qs ? qs.length : 0, max, out, n]);
      } else {
        await this.client._now('jobq_claim', this._s, [qs, qs ? qs.length : 0, max, out, n]);
      }
      try {
        const rows = n[0] ? N.koffi.decode(out[0], N.types.jobq_job, n[0]) : [];
        return rows.map((c) => new Job({
          id: Number(c.id), queue: c.queue, payload: native.bytesAt(c.payload, c.payload_len),
          attempt: c.attempt, maxAttempts: c.max_attempts, prevLost: Boolean(c.prev_lost),
          claim: c.claim, key: c.key, priority: c.priority,
          timeout: c.timeout_ms ? Number(c.timeout_ms) : null,
        }));
      } finally {
        N.fn.jobq_jobs_free(out[0], n[0]);
      }
    });
  }

  // Renews the lease; resolves with the ids of this session's jobs whose
  // cancel was requested.  Rejects with Expired when the session is gone.
  async heartbeat() {
    const ids = [null];
    const n = [0];
    const N = this.client.N;
    await this._call('jobq_heartbeat', ids, n);
    try {
      return n[0] ? Array.from(N.koffi.decode(ids[0], 'int64_t', n[0]), Number) : [];
    } finally {
      N.fn.jobq_free(ids[0]);
    }
  }

  setInFlight(n) {
    if (this._s) this.client.N.fn.jobq_session_set_in_flight(this._s, n);
  }

  // Records job as done with result; resolves with true when an earlier
  // identical acknowledgement had already committed.  Rejects with Lost
  // when the claim is gone: nothing changed.
  async complete(job, result = null) {
    const data = toBuffer(result, 'result');
    const already = [0];
    await this._call('jobq_complete', cJob(job), data.length ? data : null, data.length, already);
    return Boolean(already[0]);
  }

  // Fails job with error as its last error: retried with backoff while
  // attempts remain, else dead.
  async fail(job, error) {
    await this._call('jobq_fail', cJob(job), String(error));
  }

  // Runs job again after delay milliseconds (null: the job's backoff).
  // Spends an attempt; recorded as a requested retry, not an error.
  async retryLater(job, { delay = null, reason = '' } = {}) {
    const ms = toMs(delay, 'delay');
    await this._call('jobq_retry_later', cJob(job), ms === null ? -1 : ms, String(reason));
  }

  // Puts job back to ready now without spending its attempt.
  async release(job) {
    await this._call('jobq_release', cJob(job));
  }

  // Confirms the claim is held and moves job's deadline to now + ms.
  // Rejects with Cancelled when an operator asked to cancel it (the
  // deadline still moved), Lost when the claim is gone.
  async extend(job, ms) {
    await this._call('jobq_extend', cJob(job), toMs(ms, 'extension'));
  }
}

module.exports = { connect, Client, Session, Put, ack, putOpts };
