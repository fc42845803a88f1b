'use strict';
// protocol.js - the worker's side of the line protocol of `jobq work
// --persistent` (docs/worker-protocol.md): "ready" once, then one reply
// per "job" line, until stdin ends.  A last line without its end (the
// foreman stopped while writing it) is dropped, never run.  Needs no
// libjobq: the foreman does the talking to the database.

const fs = require('fs');
const path = require('path');
const { pathToFileURL } = require('url');
const { Job } = require('./job');
const { registry: defaultRegistry, run } = require('./handlers');

const B64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function bytes(field) {
  if (field === '-') return Buffer.alloc(0);
  if (!B64.test(field)) throw new Error(`invalid base64 '${field.slice(0, 40)}'`);
  return Buffer.from(field, 'base64');
}

const b64 = (buf) => (buf.length ? buf.toString('base64') : '-');

// The Job of one job line (without its newline); throws when it is not one.
function parse(line) {
  // job ID QUEUE ATTEMPT MAX_ATTEMPTS PREV_LOST CLAIM KEY PAYLOAD [more later]
  const f = line.split(' ');
  if (f[0] !== 'job' || f.length < 9) {
    throw new Error(`expected a job line from the foreman, got '${line.slice(0, 80)}'`);
  }
  const id = Number(f[1]);
  const attempt = Number(f[3]);
  const maxAttempts = Number(f[4]);
  if (![id, attempt, maxAttempts].every(Number.isSafeInteger)) {
    throw new Error(`invalid job line '${line.slice(0, 80)}': expected numbers`);
  }
  return new Job({ id, queue: f[2], attempt, maxAttempts, prevLost: f[5] === '1', claim: f[6],
    key: f[7] === '-' ? null : bytes(f[7]).toString('utf8'), payload: bytes(f[8]) });
}

// The reply line (with its newline) for job's outcome.
function reply(job, outcome) {
  if (outcome.state === 'done') return `done ${job.id} ${b64(outcome.result)}\n`;
  if (outcome.state === 'retry') {
    const delay = outcome.delay === null ? '-' : String(outcome.delay);
    return `retry ${job.id} ${delay} ${b64(Buffer.from(outcome.reason, 'utf8'))}\n`;
  }
  return `fail ${job.id} ${b64(Buffer.from(outcome.error, 'utf8'))}\n`;
}

// The conversation on input (a readable stream of bytes) and write (a
// function of a string); resolves with the exit status.
async function serve(input, write, reg = defaultRegistry, log = (m) => process.stderr.write(m)) {
  write('ready\n');
  let rest = '';
  for await (const chunk of input) {
    rest += chunk.toString('latin1');
    let nl;
    while ((nl = rest.indexOf('\n')) >= 0) {
      const line = rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      let job;
      try {
        job = parse(line);
      } catch (e) {
        log(`jobq worker: ${e.message}\n`);
        return 1;
      }
      write(reply(job, await run(job, reg)));
    }
  }
  if (rest !== '') {
    log('jobq worker: dropped the last line: it has no end, the foreman stopped while ' +
      'writing it\n');
  }
  return 0;
}

const USAGE = 'usage: node worker.js MODULE.js [...]';

function resolve(target) {
  const file = path.resolve(target);
  if (fs.existsSync(file)) return pathToFileURL(file).href;
  return pathToFileURL(require.resolve(target, { paths: [process.cwd()] })).href;
}

// The persistent worker's process: loads targets (modules by path or
// package name, CommonJS or ES), whose jobq.handle() calls register their
// handlers, serves the protocol on stdin and stdout, and exits when stdin
// ends.  console.log and process.stdout.write go to stderr (whose tail the
// foreman keeps as the error of a job whose worker dies): stdout is the
// protocol's alone.
async function main(targets) {
  if (targets[0] === '-h' || targets[0] === '--help') {
    process.stderr.write(`${USAGE}\n`);
    return 0;
  }
  const protocol = process.stdout.write.bind(process.stdout);
  process.stdout.write = process.stderr.write.bind(process.stderr);
  for (const target of targets) {
    try {
      await import(resolve(target));
    } catch (e) {
      process.stderr.write(`jobq worker: cannot load ${target}: ${e.stack || e}\n`);
      return 1;
    }
  }
  if (defaultRegistry.size === 0) {
    process.stderr.write(`jobq worker: no handlers: ${targets.join(' ') || 'nothing was named'} ` +
      `registered none (call jobq.handle('QUEUE', fn))\n${USAGE}\n`);
    return 2;
  }
  return serve(process.stdin, protocol);
}

// Runs main(targets) as the process: it exits when stdin ends, whatever
// timers or sockets handlers left open.
function runMain(targets = []) {
  main(targets).then((status) => process.exit(status), (e) => {
    process.stderr.write(`jobq worker: ${e.stack || e}\n`);
    process.exit(1);
  });
}

module.exports = { parse, reply, serve, main, runMain };
