'use strict';
// worker.js - jobq.Worker: handlers run in this process, with no foreman.
// The worker holds one client and one session: it claims, acknowledges
// finished jobs together with its next claim in one transaction
// (jobq_ack_claim), heartbeats every lease/3, and between claims listens
// for the database's wake-ups (jobq_watch; jobq_changed() is asked every
// 50 ms, off the event loop) with a poll timer as the fallback.  Up to
// `concurrency` handlers run at once on the event loop; every library call
// runs on libuv's thread pool.
//
// A handler cannot be killed, so a job's timeout is not enforced here, and
// a cancel request aborts job.signal for the handler to heed: use `jobq
// work` with the persistent worker (worker.js) when jobs must be stopped.

const { connect, ack } = require('./client');
const errors = require('./errors');
const { registry: defaultRegistry, run: runJob } = require('./handlers');

const TICK = 50;
const TEMPORARY = [errors.Busy, errors.Unreachable];
const isTemporary = (e) => TEMPORARY.some((cls) => e instanceof cls);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class Worker {
  // url (default $JOBQ_DB), queues (default: the queues that have handlers,
  // or every queue when a handler takes all), concurrency, lease and poll
  // (milliseconds), name (shown by `jobq sessions`), registry.
  constructor({ url, queues = null, concurrency = 1, lease = 5000, name = 'node', poll = 1000,
    registry = null, handleSignals = true } = {}) {
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw new RangeError(`invalid concurrency '${String(concurrency)}': expected 1 or more`);
    }
    this.url = url;
    this.queues = queues === null ? null : (Array.isArray(queues) ? queues : [queues]);
    this.concurrency = concurrency;
    this.lease = lease;
    this.name = name;
    this.poll = poll;
    this.registry = registry || defaultRegistry;
    this.handleSignals = handleSignals;
    this.counts = { done: 0, failed: 0, retry: 0, lost: 0 };
    this._stopping = false;
    this._abandon = false;
    this._wake = null;
  }

  // Stops claiming; run() resolves once the running jobs are done.  A
  // second stop() resolves it without waiting for them: their signals are
  // aborted, and the jobs the session still holds go back to the queue.
  stop() {
    if (this._stopping) this._abandon = true;
    this._stopping = true;
    this._wakeUp();
  }

  _wakeUp() {
    if (this._wake) {
      const w = this._wake;
      this._wake = null;
      w();
    }
  }

  // Works jobs until stop() (or SIGTERM/SIGINT; a second one does not wait
  // for the running jobs); with until 'idle', until
  // no job is ready and none runs; with 'empty', until nothing is ready,
  // scheduled, waiting or running (as `jobq work --until-empty`).
  // Resolves with the counts of outcomes.
  async run({ until = null } = {}) {
    if (![null, 'idle', 'empty'].includes(until)) {
      throw new TypeError(`invalid until '${until}': expected null, 'idle' or 'empty'`);
    }
    if (this.registry.size === 0) {
      throw new Error('no handlers are registered: register one with jobq.handle(queue, fn) first');
    }
    this._stopping = false;
    this._abandon = false;
    const stop = () => this.stop();
    if (this.handleSignals) {
      process.on('SIGTERM', stop);
      process.on('SIGINT', stop);
    }
    const client = await connect(this.url);
    try {
      await this._loop(client, until);
    } finally {
      if (this.handleSignals) {
        process.off('SIGTERM', stop);
        process.off('SIGINT', stop);
      }
      await client.close();
    }
    return this.counts;
  }

  async _loop(client, until) {
    const queues = this.queues || this.registry.queues();
    let session = await client.session({ name: this.name, lease: this.lease });
    const watching = await client._watch(queues);
    const running = new Map();
    const finished = [];
    let pending = [];
    const beatEvery = session.lease / 3;
    let nextBeat = Date.now() + beatEvery;
    let claimNow = true;
    try {
      for (;;) {
        while (finished.length) {
          const [job, outcome] = finished.shift();
          running.delete(job.id);
          this.counts[outcome.state] += 1;
          const kind = { done: 'complete', failed: 'fail', retry: 'retry' }[outcome.state];
          const data = outcome.state === 'done' ? outcome.result
            : Buffer.from(outcome.state === 'retry' ? outcome.reason : outcome.error, 'utf8');
          pending.push([job, ack(job, kind, data, outcome.delay)]);
        }
        const free = this._stopping ? 0 : this.concurrency - running.size;
        if (pending.length || (claimNow && free > 0)) {
          let jobs;
          try {
            jobs = await this._ackClaim(session, pending, queues, free);
          } catch (e) {
            if (e instanceof errors.Expired) {
              process.emitWarning(`jobq: the session ${session.id} expired: its ` +
                `${running.size} running jobs will run again elsewhere; opening a new session`);
              this.counts.lost += pending.length;
              pending = [];
              await session.close();
              session = await client.session({ name: this.name, lease: this.lease });
              continue;
            }
            if (!isTemporary(e)) throw e;
            process.emitWarning(`jobq: ${e.message}; trying again in ${this.poll}ms`);
            await sleep(this.poll);
            continue;
          }
          pending = [];
          for (const job of jobs) {
            const ctl = new AbortController();
            job.signal = ctl.signal;
            running.set(job.id, ctl);
            runJob(job, this.registry).then((outcome) => {
              finished.push([job, outcome]);
              this._wakeUp();
            });
          }
          claimNow = free > 0 && jobs.length === free;
          if (!jobs.length && !running.size && !finished.length && until) {
            if (until === 'idle' || await this._empty(client, queues)) break;
          }
          session.setInFlight(running.size);
        }
        if (this._stopping && (this._abandon || (!running.size && !finished.length))) break;
        const now = Date.now();
        if (now >= nextBeat) {
          nextBeat = now + beatEvery;
          try {
            for (const id of await session.heartbeat()) {
              const ctl = running.get(id);
              if (ctl) ctl.abort(new errors.Cancelled(`job ${id}: an operator asked to cancel it`));
            }
          } catch (e) {
            if (!(e instanceof errors.Expired) && !isTemporary(e)) throw e;
            if (isTemporary(e)) process.emitWarning(`jobq: heartbeat: ${e.message}`);
          }
        }
        const canClaim = claimNow && !this._stopping && running.size < this.concurrency;
        if (finished.length || canClaim) continue;
        claimNow = await this._wait(client, watching, Math.min(this.poll, nextBeat - Date.now()));
      }
    } finally {
      for (;;) {
        while (finished.length) running.delete(finished.shift()[0].id);
        if (!running.size) break;
        if (this._abandon) {
          for (const ctl of running.values()) ctl.abort(new errors.Cancelled('the worker stopped'));
          break;
        }
        await new Promise((resolve) => { this._wake = resolve; });
      }
      await session.close();
    }
  }

  // Acknowledges pending and claims up to free jobs in one transaction.  A
  // result the library refuses (too big) fails its job instead, and the
  // others are acknowledged.
  async _ackClaim(session, pending, queues, free) {
    const acks = pending.map(([, a]) => a);
    let jobs;
    try {
      jobs = await session._ackClaim(acks, queues, free);
    } catch (e) {
      if (!pending.length || !(e instanceof errors.Invalid || e instanceof errors.TooBig)) throw e;
      for (const [job, a] of pending) {
        try {
          await session._ackClaim([a], queues, 0);
        } catch (bad) {
          if (!(bad instanceof errors.Invalid || bad instanceof errors.TooBig)) throw bad;
          if (a.kind === 1) {
            this.counts.done -= 1;
            this.counts.failed += 1;
          }
          a.status = 0;
          await session._ackClaim([ack(job, 'fail',
            Buffer.from(`the handler's outcome was refused: ${bad.message}`))], queues, 0);
        }
        this._noteLost(job, a);
      }
      return [];
    }
    pending.forEach(([job, a]) => this._noteLost(job, a));
    return jobs;
  }

  _noteLost(job, a) {
    if (a.status === errors.Lost.errno) {
      this.counts.lost += 1;
      process.emitWarning(`jobq: job ${job.id}: the claim was lost before its outcome was ` +
        "recorded (it ran past its session's lease): it runs again");
    }
  }

  async _empty(client, queues) {
    for (const s of await client.stats()) {
      if (s.paused || (queues !== null && !queues.includes(s.name))) continue;
      if (s.ready || s.scheduled || s.waiting || s.running) return false;
    }
    return true;
  }

  // Waits until a job finishes (resolves false: acknowledge first), the
  // database changes or timeout passes (true: claim).
  async _wait(client, watching, timeout) {
    const end = Date.now() + Math.max(0, timeout);
    let woken = false;
    const wake = new Promise((resolve) => {
      this._wake = () => {
        woken = true;
        resolve();
      };
    });
    for (;;) {
      const left = end - Date.now();
      if (left <= 0) break;
      let timer;
      await Promise.race([wake, new Promise((resolve) => {
        timer = setTimeout(resolve, watching ? Math.min(TICK, left) : left);
      })]);
      clearTimeout(timer);
      if (woken) return false;
      if (watching) {
        try {
          if (await client._changed()) break;
        } catch (e) {
          break;
        }
      }
    }
    this._wake = null;
    return true;
  }
}

module.exports = { Worker };
