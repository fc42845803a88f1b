'use strict';
// jobq - Node client of jobq, a durable job queue whose only coordinator
// is an SQL database: a thin layer over libjobq (through koffi), so that
// its rules stay the library's.  Every call that talks to the database
// returns a promise and runs off the event loop.
//
//   const jobq = require('jobq');
//   const q = await jobq.connect('sqlite:jobq.db');
//   await q.put('email', { to: 'ada@example.com' }, { key: 'ada', maxAttempts: 5 });
//
//   jobq.handle('email', async (job) => {
//     if (!smtpUp()) throw new jobq.Retry('smtp down', { delay: 30000 });
//     return { sent: job.json().to };
//   });
//
// Handlers run under `jobq work --persistent -- node node_modules/jobq/worker.js
// app.js`, or in this process with new jobq.Worker({ queues: ['email'] }).run().
// Errors are jobq.JobqError and its subclasses, one per error code of the
// library (jobq.Lost, jobq.Identity, jobq.Invalid, ...).  See
// docs/clients/node.md.

const errors = require('./lib/errors');
const { connect, Client, Session, Put } = require('./lib/client');
const { Job, Retry, Fail } = require('./lib/job');
const { Outcome, Registry, handle } = require('./lib/handlers');
const { Worker } = require('./lib/worker');
const native = require('./lib/native');

module.exports = {
  version: native.HEADER_VERSION,
  libraryVersion: () => native.load().fn.jobq_version(),
  connect,
  Client,
  Session,
  Put,
  Job,
  Retry,
  Fail,
  Outcome,
  Registry,
  handle,
  // Serves the protocol of `jobq work --persistent` with the handlers
  // registered so far, in a script of its own; exits when stdin ends.
  serve: () => require('./lib/protocol').runMain([]),
  Worker,
  get pg() { return require('./lib/pg'); },
  get testing() { return require('./lib/testing'); },
  JobqError: errors.JobqError,
  LibraryError: errors.LibraryError,
  Invalid: errors.Invalid,
  InvalidURL: errors.InvalidURL,
  OutOfMemory: errors.OutOfMemory,
  NotFound: errors.NotFound,
  Lost: errors.Lost,
  Expired: errors.Expired,
  WrongState: errors.WrongState,
  Busy: errors.Busy,
  Unreachable: errors.Unreachable,
  DatabaseError: errors.DatabaseError,
  UnsupportedSchema: errors.UnsupportedSchema,
  Identity: errors.Identity,
  TooBig: errors.TooBig,
  NotSupported: errors.NotSupported,
  Cancelled: errors.Cancelled,
  ReadOnly: errors.ReadOnly,
  Denied: errors.Denied,
};
