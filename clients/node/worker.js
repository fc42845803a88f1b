#!/usr/bin/env node
'use strict';
// worker.js - the persistent worker of `jobq work --persistent`:
//
//   jobq work --persistent -c 4 -q email -- node node_modules/jobq/worker.js app.js
//
// loads the named modules (CommonJS or ES modules, by path or by package
// name), whose jobq.handle() calls register their handlers, then speaks the
// line protocol of docs/worker-protocol.md on stdin and stdout.  The
// foreman keeps the session, the heartbeats, timeouts and batching; this
// process only runs handlers, so it needs no libjobq.  console.log and
// process.stdout.write go to stderr (whose tail the foreman keeps as the
// error of a job whose worker dies): stdout is the protocol's alone.

const fs = require('fs');
const path = require('path');
const { pathToFileURL } = require('url');
const { registry } = require('./lib/handlers');
const { serve } = require('./lib/protocol');

const USAGE = 'usage: node worker.js MODULE.js [...]';

function resolve(target) {
  const file = path.resolve(target);
  if (fs.existsSync(file)) return pathToFileURL(file).href;
  return pathToFileURL(require.resolve(target, { paths: [process.cwd()] })).href;
}

async function main(argv) {
  if (argv[0] === '-h' || argv[0] === '--help') {
    process.stderr.write(`${USAGE}\n`);
    return 0;
  }
  // The protocol keeps the real stdout; the rest that writes there
  // (console.log, process.stdout.write) goes to stderr.
  const protocol = process.stdout.write.bind(process.stdout);
  process.stdout.write = process.stderr.write.bind(process.stderr);
  for (const target of argv) {
    try {
      await import(resolve(target));
    } catch (e) {
      process.stderr.write(`jobq worker: cannot load ${target}: ${e.stack || e}\n`);
      return 1;
    }
  }
  if (registry.size === 0) {
    process.stderr.write(`jobq worker: no handlers: ${argv.join(' ') || 'nothing was named'} ` +
      `registered none (call jobq.handle('QUEUE', fn))\n${USAGE}\n`);
    return 2;
  }
  return serve(process.stdin, protocol);
}

// It exits when stdin ends, whatever timers or sockets handlers left open.
main(process.argv.slice(2)).then((status) => process.exit(status), (e) => {
  process.stderr.write(`jobq worker: ${e.stack || e}\n`);
  process.exit(1);
});
