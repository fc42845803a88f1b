#!/usr/bin/env node
'use strict';
// worker.js - the persistent worker of `jobq work --persistent`:
//
//   jobq work --persistent -c 4 -q email -- node node_modules/jobq/worker.js app.js
//
// loads the named modules (CommonJS or ES modules, by path or by package
// name), whose jobq.handle() calls register their handlers, then speaks the
// line protocol of docs/worker-protocol.md on stdin and stdout
// (lib/protocol.js).  The foreman keeps the session, the heartbeats,
// timeouts and batching; this process only runs handlers, so it needs no
// libjobq.

require('./lib/protocol').runMain(process.argv.slice(2));
