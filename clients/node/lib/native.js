'use strict';
// native.js - libjobq through koffi: finding and loading the library, the C
// structures of include/jobq.h, and the prototype of every call this
// package makes.
//
// The library is looked for once, on first use, so that requiring jobq (and
// running a persistent worker, which speaks only the line protocol) needs
// neither koffi nor the library: first the path in $JOBQ_LIBRARY, then the
// system's loader path by soname (libjobq.so.0, then libjobq.so).  Only
// symbols declared in include/jobq.h are used.  Calls that may wait on the
// database run through koffi's async form, on a thread of libuv's pool, so
// that they never stall the event loop.

const errors = require('./errors');

// The version of include/jobq.h this package is written for, and the
// package's own version.
const HEADER_VERSION = '0.1.0';
const CLAIM_LEN = 32;
const LIMIT_MAX = 1000000000;        // JOBQ_LIMIT_MAX
const LIMIT_PERIOD_MAX = 86400000;   // JOBQ_LIMIT_PERIOD_MAX, milliseconds

let N = null;

function defineTypes(koffi) {
  const claim = koffi.array('char', CLAIM_LEN + 1);
  return {
    jobq: koffi.opaque('jobq'),
    jobq_session: koffi.opaque('jobq_session'),
    jobq_put_opts: koffi.struct('jobq_put_opts', {
      queue: 'const char *', payload: 'const void *', payload_len: 'size_t', priority: 'int',
      delay_ms: 'int64_t', run_at_ms: 'int64_t', key: 'const char *', barrier: 'int',
      unique_key: 'const char *', max_attempts: 'int', timeout_ms: 'int64_t',
      backoff_ms: 'int64_t', after: 'const int64_t *', n_after: 'size_t',
      after_index: 'const size_t *', n_after_index: 'size_t', after_any_outcome: 'int',
    }),
    jobq_session_opts: koffi.struct('jobq_session_opts', {
      name: 'const char *', lease_ms: 'int64_t',
    }),
    jobq_job: koffi.struct('jobq_job', {
      id: 'int64_t', queue: 'const char *', payload: 'void *', payload_len: 'size_t',
      attempt: 'int', max_attempts: 'int', priority: 'int', key: 'const char *',
      timeout_ms: 'int64_t', prev_lost: 'int', claimed_at_ms: 'int64_t', claim,
      run_at_ms: 'int64_t',
    }),
    jobq_ack: koffi.struct('jobq_ack', {
      id: 'int64_t', claim, kind: 'int', data: 'const void *', len: 'size_t',
      retry_in_ms: 'int64_t', status: 'int', already: 'int', outcome: 'int',
    }),
    jobq_job_info: koffi.struct('jobq_job_info', {
      id: 'int64_t', queue: 'const char *', state: 'int', priority: 'int', run_at_ms: 'int64_t',
      key: 'const char *', barrier: 'int', unique_key: 'const char *', payload: 'void *',
      payload_len: 'size_t', result: 'void *', result_len: 'size_t', attempts: 'int',
      max_attempts: 'int', timeout_ms: 'int64_t', backoff_ms: 'int64_t',
      session: 'const char *', claim: 'const char *', created_at_ms: 'int64_t',
      claimed_at_ms: 'int64_t', finished_at_ms: 'int64_t', last_error: 'const char *',
      cancel_requested: 'int', prev_lost: 'int', part: 'int',
    }),
    jobq_list_opts: koffi.struct('jobq_list_opts', {
      queue: 'const char *', state: 'int', scheduled: 'int', limit: 'size_t', after_id: 'int64_t',
      key: 'const char *',
    }),
    jobq_queue_stats: koffi.struct('jobq_queue_stats', {
      name: 'const char *', ready: 'int64_t', scheduled: 'int64_t', waiting: 'int64_t',
      running: 'int64_t', done: 'int64_t', dead: 'int64_t', cancelled: 'int64_t',
      paused: 'int', oldest_ready_ms: 'int64_t', key_policy: 'const char *', pending: 'int64_t',
      parts: 'int', parts_unowned: 'int',
    }),
    jobq_session_info: koffi.struct('jobq_session_info', {
      id: 'const char *', name: 'const char *', host: 'const char *', pid: 'int64_t',
      epoch: 'int64_t', started_at_ms: 'int64_t', heartbeat_at_ms: 'int64_t',
      expires_at_ms: 'int64_t', lease_ms: 'int64_t', claimed: 'int64_t', in_flight: 'int64_t',
      done: 'int64_t', failed: 'int64_t', expired: 'int', parts: 'void *', nparts: 'size_t',
    }),
    jobq_identity: koffi.struct('jobq_identity', {
      queue_id: koffi.array('char', 37), epoch: 'int64_t', seq: 'int64_t',
      schema_version: 'int', now_ms: 'int64_t',
    }),
    jobq_limits: koffi.struct('jobq_limits', {
      queue: 'const char *', running: 'int64_t', rate: 'int64_t', rate_period_ms: 'int64_t',
      running_per_key: 'int64_t', rate_per_key: 'int64_t', rate_per_key_period_ms: 'int64_t',
      running_now: 'int64_t', claimed_now: 'int64_t', keys_full_now: 'int64_t', held: 'int',
    }),
  };
}

// The structures by their C name, for the test that holds them against the
// header's layout.
const STRUCTS = [
  'jobq_put_opts', 'jobq_session_opts', 'jobq_job', 'jobq_ack', 'jobq_job_info',
  'jobq_list_opts', 'jobq_queue_stats', 'jobq_session_info', 'jobq_identity', 'jobq_limits',
];

const PROTOTYPES = [
  'const char *jobq_version(void)',
  'void jobq_free(void *p)',
  'const char *jobq_strerror(int err)',
  'const char *jobq_err_name(int err)',
  'int jobq_open(const char *url, _Out_ jobq **out)',
  'void jobq_close(jobq *db)',
  'const char *jobq_errmsg(const jobq *db)',
  'const char *jobq_warning(const jobq *db)',
  'void *jobq_url_redact(const char *url)',
  'int jobq_init(jobq *db)',
  'int jobq_begin(jobq *db)',
  'int jobq_commit(jobq *db)',
  'int jobq_rollback(jobq *db)',
  'void *jobq_native(jobq *db)',
  'void jobq_put_opts_init(_Out_ jobq_put_opts *opts)',
  'int jobq_put(jobq *db, const jobq_put_opts *opts, _Out_ int64_t *id, _Out_ int *existed)',
  'int jobq_put_many(jobq *db, const jobq_put_opts *opts, size_t n, _Out_ int64_t *ids, ' +
    '_Out_ uint8_t *existed)',
  'void jobq_session_opts_init(_Out_ jobq_session_opts *opts)',
  'int jobq_session_open(jobq *db, const jobq_session_opts *opts, _Out_ jobq_session **out)',
  'void jobq_session_close(jobq_session *s)',
  'const char *jobq_session_id(const jobq_session *s)',
  'int64_t jobq_session_lease_ms(const jobq_session *s)',
  'int jobq_heartbeat(jobq_session *s, _Out_ int64_t **cancel, _Out_ size_t *ncancel)',
  'void jobq_session_set_in_flight(jobq_session *s, int64_t in_flight)',
  'int jobq_claim(jobq_session *s, const char **queues, size_t nq, size_t max, ' +
    '_Out_ jobq_job **jobs, _Out_ size_t *n)',
  'void jobq_jobs_free(jobq_job *jobs, size_t n)',
  'int jobq_watch(jobq *db, _Out_ int *fd)',
  'int jobq_changed(jobq *db)',
  'int jobq_watch_queues(jobq *db, const char **queues, size_t nq)',
  'int jobq_ack_many(jobq_session *s, _Inout_ jobq_ack *acks, size_t n)',
  'int jobq_ack_claim(jobq_session *s, _Inout_ jobq_ack *acks, size_t n, ' +
    'const char **queues, size_t nq, size_t max, _Out_ jobq_job **jobs, _Out_ size_t *njobs)',
  'int jobq_complete(jobq_session *s, const jobq_job *job, const void *result, size_t len, ' +
    '_Out_ int *already)',
  'int jobq_fail(jobq_session *s, const jobq_job *job, const char *error)',
  'int jobq_retry_later(jobq_session *s, const jobq_job *job, int64_t delay_ms, ' +
    'const char *reason)',
  'int jobq_release(jobq_session *s, const jobq_job *job)',
  'int jobq_extend(jobq_session *s, const jobq_job *job, int64_t ms)',
  'const char *jobq_state_name(int state)',
  'int jobq_state_parse(const char *name)',
  'int jobq_show(jobq *db, int64_t id, _Out_ jobq_job_info **out)',
  'int jobq_list(jobq *db, const jobq_list_opts *opts, _Out_ jobq_job_info **out, ' +
    '_Out_ size_t *n)',
  'void jobq_info_free(jobq_job_info *infos, size_t n)',
  'int jobq_stats(jobq *db, _Out_ jobq_queue_stats **out, _Out_ size_t *n)',
  'void jobq_stats_free(jobq_queue_stats *stats, size_t n)',
  'int jobq_sessions(jobq *db, _Out_ jobq_session_info **out, _Out_ size_t *n)',
  'void jobq_sessions_free(jobq_session_info *s, size_t n)',
  'int jobq_retry(jobq *db, int64_t id)',
  'int jobq_retry_dead(jobq *db, const char *queue, _Out_ int64_t *count)',
  'int jobq_cancel(jobq *db, int64_t id, _Out_ int *now)',
  'int jobq_pause(jobq *db, const char *queue)',
  'int jobq_resume(jobq *db, const char *queue)',
  'int jobq_identity_get(jobq *db, _Out_ jobq_identity *out)',
  'int jobq_set_limits(jobq *db, const char *queue, const jobq_limits *limits)',
  'int jobq_limits_list(jobq *db, const char *queue, _Out_ jobq_limits **out, _Out_ size_t *n)',
  'void jobq_limits_free(jobq_limits *limits, size_t n)',
  'int jobq_parse_duration(const char *text, _Out_ int64_t *ms)',
  'int jobq_parse_rate(const char *text, _Out_ int64_t *count, _Out_ int64_t *period_ms)',
];

function candidates() {
  const path = process.env.JOBQ_LIBRARY;
  if (path) return { names: [path], fromEnv: true };
  return { names: ['libjobq.so.0', 'libjobq.so'], fromEnv: false };
}

// The loaded library: { koffi, lib, types, fn: { name: function } }.
// Throws errors.LibraryError, naming where it looked, when it cannot load.
function load() {
  if (N !== null) return N;
  let koffi;
  try {
    koffi = require('koffi');
  } catch (e) {
    throw new errors.LibraryError(`cannot load koffi, the FFI this package calls libjobq ` +
      `through: ${e.message}; install the package's dependencies (npm install)`);
  }
  const { names, fromEnv } = candidates();
  let lib = null;
  const why = [];
  for (const name of names) {
    try {
      lib = koffi.load(name);
      break;
    } catch (e) {
      why.push(`${name}: ${e.message}`);
    }
  }
  if (lib === null) {
    if (fromEnv) {
      throw new errors.LibraryError(`cannot load libjobq from JOBQ_LIBRARY '${names[0]}': ` +
        `${why[0]}; expected the path of libjobq.so (build/libjobq.so after make)`);
    }
    throw new errors.LibraryError("cannot load libjobq: JOBQ_LIBRARY is not set and the " +
      "system's loader path has neither libjobq.so.0 nor libjobq.so " +
      `(${why[why.length - 1]}); install jobq (make install, then ldconfig) or set ` +
      'JOBQ_LIBRARY to the path of libjobq.so');
  }
  const types = defineTypes(koffi);
  const fn = {};
  for (const proto of PROTOTYPES) {
    const name = proto.match(/(jobq_\w+)\(/)[1];
    try {
      fn[name] = lib.func(proto);
    } catch (e) {
      throw new errors.LibraryError(`the libjobq at '${names.join("' or '")}' has no ` +
        `${name}(): it is older than this package, which is written for libjobq ` +
        `${HEADER_VERSION} (${e.message})`);
    }
  }
  N = { koffi, lib, types, fn };
  return N;
}

// Calls fn(...args) on a thread of libuv's pool; resolves with its return.
function callAsync(f, args) {
  return new Promise((resolve, reject) => {
    f.async(...args, (err, res) => (err ? reject(err) : resolve(res)));
  });
}

// n bytes at ptr, copied into a Buffer (an empty one for NULL or 0 bytes).
function bytesAt(ptr, n) {
  if (!ptr || !n) return Buffer.alloc(0);
  const b = load().koffi.decode(ptr, 'uint8_t', n);
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

module.exports = { HEADER_VERSION, LIMIT_MAX, LIMIT_PERIOD_MAX, STRUCTS, load, callAsync,
  bytesAt };
