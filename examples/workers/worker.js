#!/usr/bin/env node
// worker.js - a persistent jobq worker in Node (no packages needed).
//
//   jobq work --persistent -c 4 -- node examples/workers/worker.js
//
// It speaks the line protocol of docs/worker-protocol.md: it writes
// "ready" once, then reads one "job" line at a time on stdin and answers
// each with one "done", "fail" or "retry" line on stdout.  Bytes (keys, payloads, results, errors)
// travel as base64, so they may be anything.  A thrown error fails the job
// with its stack as the error.  It exits when stdin ends, dropping a last
// line that has no newline (docs/worker-protocol.md).
//
// handle() is the part to replace.  What it does here is an example, and
// what the tests check:
//   fail...     fails, with the payload in the error
//   retry       asks to be retried in 100 ms on attempt 1, done on attempt 2
//   sleep:MS    sleeps MS milliseconds, then done
//   crash       exits with status 3 in the middle of the job
//   anything    done, with the payload as the result (an echo)
'use strict';

class Retry extends Error {
  constructor(reason, delayMs) {
    super(reason);
    this.delayMs = delayMs;
  }
}

// Does the job; returns the result as a Buffer, or throws.
async function handle(job) {
  const p = job.payload;
  const text = p.subarray(0, 100).toString();
  if (text.startsWith('fail')) throw new Error('failed on purpose: ' + text);
  if (text === 'retry') {
    if (job.attempt === 1) throw new Retry('not yet', 100);
    return Buffer.from('retried');
  }
  if (text.startsWith('sleep:')) {
    const ms = parseInt(text.slice(6), 10);
    await new Promise((resolve) => setTimeout(resolve, ms));
    return Buffer.from(`slept ${ms} ms`);
  }
  if (text === 'crash') {
    process.stderr.write(`worker.js: crashing on job ${job.id} on purpose\n`);
    process.exit(3);
  }
  return p;
}

// The whole lines of a stream, without their newlines.  A last line that
// has no newline is dropped: the foreman died while writing it, so it is
// not a whole job (docs/worker-protocol.md).  (readline would hand it
// over as if it were whole.)
async function* lines(stream) {
  stream.setEncoding('latin1'); // the protocol is ASCII
  let pending = [];
  for await (const chunk of stream) {
    let start = 0;
    let nl;
    while ((nl = chunk.indexOf('\n', start)) >= 0) {
      pending.push(chunk.slice(start, nl));
      yield pending.join('');
      pending = [];
      start = nl + 1;
    }
    if (start < chunk.length) pending.push(chunk.slice(start));
  }
  if (pending.length > 0) {
    process.stderr.write('worker.js: dropped a partial job line at the end of input\n');
  }
}

const b64 = (buf) => (buf.length > 0 ? buf.toString('base64') : '-');
const bytes = (field) => (field === '-' ? Buffer.alloc(0) : Buffer.from(field, 'base64'));

async function main() {
  // Expensive set-up (connections, models) goes before this line: no job
  // comes before it.
  process.stdout.write('ready\n');
  for await (const line of lines(process.stdin)) {
    // job ID QUEUE ATTEMPT MAX_ATTEMPTS PREV_LOST CLAIM KEY PAYLOAD [...]
    const f = line.split(' ');
    if (f[0] !== 'job' || f.length < 9) {
      process.stderr.write(`worker.js: expected a job line from the foreman, got '${line.slice(0, 80)}'\n`);
      process.exit(1);
    }
    const job = {
      id: f[1],
      queue: f[2],
      attempt: parseInt(f[3], 10),
      maxAttempts: parseInt(f[4], 10),
      prevLost: f[5] === '1',
      claim: f[6], // for idempotent side effects
      key: f[7] === '-' ? null : bytes(f[7]),
      payload: bytes(f[8]),
    };
    let reply;
    try {
      reply = `done ${job.id} ${b64(Buffer.from(await handle(job)))}`;
    } catch (e) {
      if (e instanceof Retry) {
        const delay = e.delayMs === undefined ? '-' : String(e.delayMs);
        reply = `retry ${job.id} ${delay} ${b64(Buffer.from(e.message))}`;
      } else {
        reply = `fail ${job.id} ${b64(Buffer.from(String(e.stack || e)))}`;
      }
    }
    process.stdout.write(reply + '\n');
  }
}

main();
