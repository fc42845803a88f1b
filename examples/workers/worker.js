#!/usr/bin/env node
// worker.js - a persistent jobq worker in Node, on the jobq package
// (clients/node; see docs/clients/node.md):
//
//   jobq work --persistent -c 4 -- node examples/workers/worker.js
//
// The package speaks the line protocol of docs/worker-protocol.md: "ready"
// once, then one "done", "fail" or "retry" reply per job, with bytes (keys,
// payloads, results, errors) in base64, so they may be anything.  What the
// handler logs goes to stderr.  A thrown error fails the job with its stack;
// jobq.Fail fails it with a message alone.  It exits when stdin ends,
// dropping a last line that has no newline: the foreman died while
// writing it, and it is no whole job.
//
// The handler is the part to replace.  What it does here is an example, and
// what the tests check:
//   fail...     fails, with the payload in the error
//   retry       asks to run again in 100 ms on attempt 1 (a requested
//               retry: it spends an attempt, but is not recorded as an
//               error), done on attempt 2
//   sleep:MS    sleeps MS milliseconds, then done
//   crash       exits with status 3 in the middle of the job
//   anything    done, with the payload as the result (an echo)
'use strict';

let jobq;
try {
  jobq = require('jobq');
} catch (e) {
  if (e.code !== 'MODULE_NOT_FOUND') throw e;
  jobq = require('../../clients/node'); // the package of this checkout
}

jobq.handle(null, async (job) => { // every queue
  const p = job.payload;
  const text = p.subarray(0, 100).toString();
  if (text.startsWith('fail')) throw new jobq.Fail(`failed on purpose: ${text}`);
  if (text === 'retry') {
    if (job.attempt === 1) throw new jobq.Retry('not yet', { delay: 100 });
    return 'retried';
  }
  if (text.startsWith('sleep:')) {
    const ms = parseInt(text.slice(6), 10);
    await new Promise((resolve) => setTimeout(resolve, ms));
    return `slept ${ms} ms`;
  }
  if (text === 'crash') {
    process.stderr.write(`worker.js: crashing on job ${job.id} on purpose\n`);
    process.exit(3);
  }
  return p;
});

// Expensive set-up (connections, models) goes before this line: no job
// comes before it.
jobq.serve();
