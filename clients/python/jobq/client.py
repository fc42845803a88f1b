"""client.py - jobq.connect(url) and the Client it returns: put and
put_many, inspection (stats, show, ls, sessions, identity),
administration (cancel, retry, pause, resume, set_limits, limits),
transactions with the application's own SQL on SQLite, and the worker's
Session (claim, heartbeat, complete, fail, retry_later, release,
extend).

A Client is one libjobq handle.  The library lets a handle be used by one
thread at a time; the Client's lock makes that so, and a transaction holds
it from begin to commit, so that another thread's put never lands in it.
"""

import ctypes
import os
import threading
from contextlib import contextmanager

from . import _native as N
from . import errors
from .job import Job, at_ms, from_ms, to_bytes, to_ms


class JobId(int):
    """The id of a put job (an int), and whether a job with the same unique
    key already existed (then nothing was written and this is its id)."""

    existed = False

    def __new__(cls, value, existed=False):
        self = super().__new__(cls, value)
        self.existed = bool(existed)
        return self


class _Record:
    """A plain record with named fields, printed with them."""

    __slots__ = ()

    def __init__(self, **fields):
        for k, v in fields.items():
            setattr(self, k, v)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % (k, getattr(self, k)) for k in self.__slots__))

    def __eq__(self, other):
        return type(self) is type(other) and all(
            getattr(self, k) == getattr(other, k) for k in self.__slots__)


class JobInfo(_Record):
    """One job as show() and ls() see it.  Times are aware UTC datetimes
    (None when not yet), durations seconds.  ls() leaves payload and
    result out (None)."""

    __slots__ = ("id", "queue", "state", "priority", "run_at", "key", "barrier", "unique_key",
                 "payload", "result", "attempts", "max_attempts", "timeout", "backoff",
                 "session", "claim", "created_at", "claimed_at", "finished_at", "last_error",
                 "cancel_requested", "prev_lost")


class QueueStats(_Record):
    """Counts of one queue: ready (run_at reached), scheduled (ready but
    later), waiting (for a key or barrier), pending (for the jobs it was
    put after), running, done, dead, cancelled;
    paused; oldest_ready (seconds the oldest ready job has waited);
    key_policy ("block" or "skip")."""

    __slots__ = ("name", "ready", "scheduled", "waiting", "pending", "running", "done", "dead",
                 "cancelled", "paused", "oldest_ready", "key_policy")


class QueueLimits(_Record):
    """A queue's limits and how it stands: running (at most this many of
    its jobs claimed at once), rate and rate_period (at most rate claimed
    in any rate_period seconds of the database clock), running_per_key
    (at most this many of one ordering key), rate_per_key and
    rate_per_key_period (at most rate_per_key of one ordering key claimed
    in any rate_per_key_period seconds), each None when not set;
    running_now (its jobs claimed now), claimed_now (claimed in the last
    rate period), keys_full_now (keys claimed rate_per_key times in the
    last period), held (a job is ready but the running or rate limit, or
    its key's rate, is full)."""

    __slots__ = ("queue", "running", "rate", "rate_period", "running_per_key", "rate_per_key",
                 "rate_per_key_period", "running_now", "claimed_now", "keys_full_now", "held")


class SessionInfo(_Record):
    __slots__ = ("id", "name", "host", "pid", "epoch", "started_at", "heartbeat_at",
                 "expires_at", "lease", "claimed", "in_flight", "done", "failed", "expired")


class IdentityInfo(_Record):
    """The database's identity: queue_id, epoch, seq (the highest job id
    given), schema_version and now (the database clock)."""

    __slots__ = ("queue_id", "epoch", "seq", "schema_version", "now")


def _text(s):
    return None if s is None else s.encode("utf-8")


def _c_int(value, what):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("invalid %s %r: expected an integer" % (what, value))
    if not -2**31 <= value < 2**31:
        raise errors.Invalid("invalid %s '%d': out of range" % (what, value))
    return value


def _limit(value, what):
    """A count limit (None: no limit) for jobq_limits, where 0 is none."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("invalid %s %r: expected an integer or None" % (what, value))
    if not 1 <= value <= N.LIMIT_MAX:
        raise errors.Invalid("invalid %s '%d': expected 1 to %d, or None for no limit"
                             % (what, value, N.LIMIT_MAX))
    return value


def _rate(lib, rate, what="rate"):
    """rate ("100/1s", "10/m", or a (count, seconds) pair) as (count,
    period in ms); the range of a period in seconds is the library's to
    check (held within int64_t, so that its message names it truly).
    what names it in messages."""
    if isinstance(rate, (tuple, list)) and len(rate) == 2:
        ms = to_ms(rate[1], what + " period")
        if ms is None:
            raise TypeError("invalid %s period None: expected seconds (a number) or a "
                            "timedelta" % what)
        return _limit(rate[0], what + " count"), max(-2**63, min(ms, 2**63 - 1))
    if not isinstance(rate, str):
        raise TypeError("invalid %s %r: expected N/PERIOD like '100/1s', a (count, seconds) "
                        "pair or None" % (what, rate))
    count, ms = ctypes.c_int64(), ctypes.c_int64()
    if lib.jobq_parse_rate(rate.encode(), ctypes.byref(count), ctypes.byref(ms)) < 0:
        raise errors.Invalid("invalid %s '%s': expected N/PERIOD, N from 1 to %d and PERIOD "
                             "from 1ms to 1d, like 100/1s or 10/1m" % (what, rate, N.LIMIT_MAX))
    return count.value, ms.value


def _queue_limits(c):
    return QueueLimits(
        queue=N.text(c.queue), running=c.running or None, rate=c.rate or None,
        rate_period=c.rate_period_ms / 1000 if c.rate else None,
        running_per_key=c.running_per_key or None, rate_per_key=c.rate_per_key or None,
        rate_per_key_period=c.rate_per_key_period_ms / 1000 if c.rate_per_key else None,
        running_now=c.running_now, claimed_now=c.claimed_now, keys_full_now=c.keys_full_now,
        held=bool(c.held))


_PUT_OPTIONS = ("queue", "key", "unique", "priority", "delay", "at", "max_attempts", "timeout",
                "backoff", "barrier", "after", "after_any_outcome", "after_index")


class Put:
    """One job of a put_many() with options of its own:

        q.put_many([{"to": "ada"}, jobq.Put({"to": "bob"}, key="bob", queue="vip")],
                   queue="email")

    The options are put()'s (queue, key, unique, priority, delay, at,
    max_attempts, timeout, backoff, barrier, after, after_any_outcome), and
    after_index: the places in the list of earlier jobs it waits for, so
    that a graph of jobs goes in one put_many()."""

    __slots__ = ("payload", "options")

    def __init__(self, payload=b"", **options):
        for name in options:
            if name not in _PUT_OPTIONS:
                raise TypeError("Put() got an unexpected option '%s': expected one of %s"
                                % (name, ", ".join(_PUT_OPTIONS)))
        self.payload = payload
        self.options = options

    def __repr__(self):
        return "jobq.Put(%r%s)" % (self.payload, "".join(
            ", %s=%r" % kv for kv in self.options.items()))


def _ints(values, what, ctype):
    """A ctypes array of the ints in values (a list or tuple), or None."""
    if values is None:
        return None
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError("invalid %s %r: expected a list of ints" % (what, values))
    values = list(values)
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError("invalid %s %r: expected a list of ints" % (what, values))
        if v < 0:
            raise errors.Invalid("invalid %s %r: expected ints of 0 or more" % (what, values))
    return (ctype * max(len(values), 1))(*values), len(values)


def _put_opts(lib, o, keep, queue=None, payload=b"", key=None, unique=None, priority=None, delay=None,
              at=None, max_attempts=None, timeout=None, backoff=None, barrier=False, after=None,
              after_any_outcome=False, after_index=None):
    """Fills the jobq_put_opts o; keep holds the buffers it points to."""
    lib.jobq_put_opts_init(ctypes.byref(o))
    if queue is not None:
        if not isinstance(queue, str):
            raise TypeError("invalid queue %r: expected a queue name" % (queue,))
        o.queue = queue.encode()
    data = to_bytes(payload)
    if data:
        buf = ctypes.create_string_buffer(data, len(data))
        keep.append(buf)
        o.payload = ctypes.cast(buf, ctypes.c_void_p)
        o.payload_len = len(data)
    for name, value in (("key", key), ("unique key", unique)):
        if value is not None and not isinstance(value, str):
            raise TypeError("invalid %s %r: expected a str" % (name, value))
    o.key = _text(key)
    o.unique_key = _text(unique)
    if priority is not None:
        o.priority = _c_int(priority, "priority")
    if delay is not None:
        o.delay_ms = to_ms(delay, "delay")
    if at is not None:
        o.run_at_ms = at_ms(at)
    if max_attempts is not None:
        o.max_attempts = _c_int(max_attempts, "max_attempts")
    if timeout is not None:
        o.timeout_ms = to_ms(timeout, "timeout")
    if backoff is not None:
        o.backoff_ms = to_ms(backoff, "backoff")
    o.barrier = 1 if barrier else 0
    ids = _ints(after, "after", ctypes.c_int64)
    if ids is not None:
        keep.append(ids[0])
        o.after = ctypes.cast(ids[0], ctypes.POINTER(ctypes.c_int64))
        o.n_after = ids[1]
    places = _ints(after_index, "after_index", ctypes.c_size_t)
    if places is not None:
        keep.append(places[0])
        o.after_index = ctypes.cast(places[0], ctypes.POINTER(ctypes.c_size_t))
        o.n_after_index = places[1]
    o.after_any_outcome = 1 if after_any_outcome else 0


def _job_info(c, with_data):
    state = N.load().jobq_state_name(c.state)
    return JobInfo(
        id=c.id, queue=N.text(c.queue), state=N.text(state), priority=c.priority,
        run_at=from_ms(c.run_at_ms), key=N.text(c.key), barrier=bool(c.barrier),
        unique_key=N.text(c.unique_key),
        payload=(N.bytes_at(c.payload, c.payload_len) or b"") if with_data else None,
        result=N.bytes_at(c.result, c.result_len) if with_data else None,
        attempts=c.attempts, max_attempts=c.max_attempts,
        timeout=c.timeout_ms / 1000 if c.timeout_ms else None, backoff=c.backoff_ms / 1000,
        session=N.text(c.session), claim=N.text(c.claim), created_at=from_ms(c.created_at_ms),
        claimed_at=from_ms(c.claimed_at_ms), finished_at=from_ms(c.finished_at_ms),
        last_error=N.text(c.last_error), cancel_requested=bool(c.cancel_requested),
        prev_lost=bool(c.prev_lost))


def connect(url=None):
    """Opens the queue database named by url (default: $JOBQ_DB, else
    "sqlite:jobq.db"): "sqlite:PATH", "postgres://USER:PASSWORD@HOST/DB",
    "mysql://…", with the options of `jobq --db`.  An SQLite file is made
    and initialised when missing; a server database needs `jobq init` (or
    Client.init()) once."""
    return Client(url)


class Client:
    """A handle on one queue database.  Use it as a context manager, or
    call close()."""

    def __init__(self, url=None):
        if url is None:
            url = os.environ.get("JOBQ_DB") or "sqlite:jobq.db"
        if not isinstance(url, str):
            raise TypeError("invalid url %r: expected a database URL" % (url,))
        self._lib = lib = N.load()
        self._lock = threading.RLock()
        self._sessions = set()
        self._db = ctypes.c_void_p()
        self.url = url
        rc = lib.jobq_open(url.encode(), ctypes.byref(self._db))
        if rc < 0:
            err = self._error(rc)
            lib.jobq_close(self._db)
            self._db = None
            raise err
        red = lib.jobq_url_redact(url.encode())
        self.redacted_url = ctypes.string_at(red).decode() if red else "***"
        lib.jobq_free(red)

    # -- plumbing

    def _error(self, rc):
        msg = self._lib.jobq_errmsg(self._db).decode("utf-8", "replace")
        if not msg:
            msg = self._lib.jobq_strerror(rc).decode()
        return errors.from_code(rc, msg, N.err_name(rc))

    def _call(self, fn, *args):
        """Calls fn(handle, *args) under the lock; raises on an error."""
        with self._lock:
            if not self._db:
                raise errors.WrongState("the jobq client is closed")
            rc = fn(self._db, *args)
            if rc < 0:
                raise self._error(rc)
            return rc

    def close(self):
        """Closes the handle (rolling back an open transaction), and the
        sessions still open on it first."""
        with self._lock:
            for s in list(self._sessions):
                s.close()
            if self._db:
                self._lib.jobq_close(self._db)
                self._db = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return "<jobq.Client %s>" % self.redacted_url

    @property
    def warning(self):
        """A warning about the database's durability settings, or None."""
        with self._lock:
            w = self._lib.jobq_warning(self._db)
            return None if w is None else w.decode()

    def init(self):
        """Creates or migrates jobq's tables (`jobq init`)."""
        self._call(self._lib.jobq_init)

    # -- put

    def put(self, queue, payload=b"", *, key=None, unique=None, priority=None, delay=None,
            at=None, max_attempts=None, timeout=None, backoff=None, barrier=False, after=None,
            after_any_outcome=False):
        """Enqueues one job and returns its id (a JobId: an int whose
        .existed says that a job with this unique key was already there,
        and nothing was written).

        payload: bytes, str (UTF-8), None, or anything else as JSON.
        key: ordering key (jobs sharing it run one at a time, in order).
        unique: unique among the queue's unfinished jobs.
        priority: -32768..32767, higher first.  delay: seconds or a
        timedelta; at: a datetime or Unix seconds (one or the other).
        max_attempts: 1..1000 (25).  timeout: seconds, for the worker to
        enforce.  backoff: seconds, the base of the exponential backoff (1).
        barrier: runs after every earlier job of the queue, before any
        later one.  after: ids of jobs put before; the job is "pending"
        until they are all done, and cancelled when one dies or is
        cancelled, unless after_any_outcome (then it runs once they have
        all finished)."""
        keep = []
        o = N.PutOpts()
        _put_opts(self._lib, o, keep, queue, payload, key, unique, priority, delay, at,
                  max_attempts, timeout, backoff, barrier, after, after_any_outcome)
        job_id = ctypes.c_int64()
        existed = ctypes.c_int()
        self._call(self._lib.jobq_put, ctypes.byref(o), ctypes.byref(job_id),
                   ctypes.byref(existed))
        return JobId(job_id.value, existed.value)

    def put_many(self, jobs, *, queue=None, **defaults):
        """Enqueues many jobs in one transaction: all or none.  Each item is
        a payload, or a jobq.Put (a payload with options of its own);
        queue= and the other keyword arguments, put()'s, are the defaults
        of every item.  Returns the JobIds in order.  An error names the
        index of the bad job ("job 7: ...")."""
        for name in defaults:
            if name not in _PUT_OPTIONS:
                raise TypeError("put_many() got an unexpected keyword argument '%s'" % name)
        jobs = list(jobs)
        n = len(jobs)
        if n == 0:
            return []
        opts = (N.PutOpts * n)()
        keep = []
        for i, item in enumerate(jobs):
            args = dict(defaults, queue=queue)
            if isinstance(item, Put):
                args.update(item.options, payload=item.payload)
            else:
                args["payload"] = item
            try:
                _put_opts(self._lib, opts[i], keep, **args)
            except (TypeError, errors.Invalid) as e:
                raise type(e)("job %d: %s" % (i, e)) from None
        ids = (ctypes.c_int64 * n)()
        existed = (ctypes.c_ubyte * n)()
        self._call(self._lib.jobq_put_many, opts, n, ids, existed)
        return [JobId(ids[i], existed[i]) for i in range(n)]

    # -- transactions

    @contextmanager
    def transaction(self):
        """Puts (and acknowledgements, and execute() on SQLite) inside the
        block commit together when it ends, or not at all when it raises:

            with q.transaction():
                q.execute("INSERT INTO orders(id) VALUES (?)", (7,))
                q.put("email", "order 7")

        Other threads wait for the block to end before using this client."""
        with self._lock:
            self._call(self._lib.jobq_begin)
            try:
                yield self
            except BaseException:
                self._lib.jobq_rollback(self._db)
                raise
            self._call(self._lib.jobq_commit)

    def execute(self, sql, params=()):
        """Runs one SQL statement on the client's own SQLite connection (in
        the open transaction, if any) and returns its rows as tuples.
        params: a sequence for ? placeholders, or a dict for :name ones.
        SQLite only: on PostgreSQL, use jobq.pg.put() on your own
        connection."""
        if not self.url.split(":", 1)[0] in ("sqlite", "sqlite3"):
            raise errors.NotSupported(
                "execute() runs SQL on an SQLite queue database only, not on '%s': on "
                "PostgreSQL, enqueue in your own transaction with jobq.pg.put(connection, ...)"
                % self.redacted_url)
        from . import _sqlite
        with self._lock:
            if not self._db:
                raise errors.WrongState("the jobq client is closed")
            return _sqlite.execute(self._lib.jobq_native(self._db), sql, params)

    # -- inspection

    def stats(self):
        """Per-queue counts, as a list of QueueStats by name."""
        out = ctypes.POINTER(N.QueueStats)()
        n = ctypes.c_size_t()
        self._call(self._lib.jobq_stats, ctypes.byref(out), ctypes.byref(n))
        try:
            return [QueueStats(
                name=N.text(s.name), ready=s.ready, scheduled=s.scheduled, waiting=s.waiting,
                pending=s.pending, running=s.running, done=s.done, dead=s.dead, cancelled=s.cancelled,
                paused=bool(s.paused), oldest_ready=s.oldest_ready_ms / 1000,
                key_policy=N.text(s.key_policy)) for s in out[:n.value]]
        finally:
            self._lib.jobq_stats_free(out, n.value)

    def show(self, job_id):
        """One job, unfinished or archived, as a JobInfo; raises
        jobq.NotFound when there is none."""
        out = ctypes.POINTER(N.JobInfo)()
        self._call(self._lib.jobq_show, int(job_id), ctypes.byref(out))
        try:
            return _job_info(out[0], True)
        finally:
            self._lib.jobq_info_free(out, 1)

    def ls(self, queue=None, state=None, *, limit=100, after=0):
        """Jobs by id (payload and result left out), at most limit of them
        with ids above after (for paging).  state: "ready", "scheduled"
        (ready, but later), "running", "waiting", "pending", "done", "dead",
        "cancelled", or None for all."""
        o = N.ListOpts()
        o.queue = _text(queue)
        if state is not None:
            code = self._lib.jobq_state_parse(str(state).encode())
            if code == 0:
                raise errors.Invalid("invalid state '%s': expected ready, scheduled, running, "
                                     "waiting, pending, done, dead or cancelled" % state)
            o.state = code
            o.scheduled = 1 if state == "scheduled" else 0
        o.limit = limit
        o.after_id = int(after)
        out = ctypes.POINTER(N.JobInfo)()
        n = ctypes.c_size_t()
        self._call(self._lib.jobq_list, ctypes.byref(o), ctypes.byref(out), ctypes.byref(n))
        try:
            return [_job_info(out[i], False) for i in range(n.value)]
        finally:
            self._lib.jobq_info_free(out, n.value)

    def sessions(self):
        """The live (and expired, not yet reaped) sessions."""
        out = ctypes.POINTER(N.SessionInfo)()
        n = ctypes.c_size_t()
        self._call(self._lib.jobq_sessions, ctypes.byref(out), ctypes.byref(n))
        try:
            return [SessionInfo(
                id=N.text(s.id), name=N.text(s.name), host=N.text(s.host), pid=s.pid,
                epoch=s.epoch, started_at=from_ms(s.started_at_ms),
                heartbeat_at=from_ms(s.heartbeat_at_ms), expires_at=from_ms(s.expires_at_ms),
                lease=s.lease_ms / 1000, claimed=s.claimed, in_flight=s.in_flight,
                done=s.done, failed=s.failed, expired=bool(s.expired))
                for s in out[:n.value]]
        finally:
            self._lib.jobq_sessions_free(out, n.value)

    def identity(self):
        """The database's identity (IdentityInfo)."""
        i = N.Identity()
        self._call(self._lib.jobq_identity_get, ctypes.byref(i))
        return IdentityInfo(queue_id=i.queue_id.decode(), epoch=i.epoch, seq=i.seq,
                            schema_version=i.schema_version, now=from_ms(i.now_ms))

    # -- administration

    def cancel(self, job_id):
        """Cancels a job: True when it was cancelled at once (it was ready
        or waiting), False when it is running and its worker was asked to
        stop it.  jobq.WrongState for a finished job."""
        now = ctypes.c_int()
        self._call(self._lib.jobq_cancel, int(job_id), ctypes.byref(now))
        return bool(now.value)

    def retry(self, job_id):
        """Puts a dead or cancelled job back to run, with fresh attempts."""
        self._call(self._lib.jobq_retry, int(job_id))

    def retry_dead(self, queue=None):
        """Retries every dead job (of queue, or of all); returns how many."""
        count = ctypes.c_int64()
        self._call(self._lib.jobq_retry_dead, _text(queue), ctypes.byref(count))
        return count.value

    def pause(self, queue):
        """Stops claims from queue (running jobs go on)."""
        self._call(self._lib.jobq_pause, _text(queue))

    def resume(self, queue):
        self._call(self._lib.jobq_resume, _text(queue))

    def set_limits(self, queue, *, running=None, rate=None, running_per_key=None,
                   rate_per_key=None):
        """Sets queue's limits, across every worker and machine, in place
        of those it had (all None removes them):

            q.set_limits("email", running=5, rate="100/1m")

        running: at most this many of its jobs claimed at once.  rate:
        at most N claimed in any period of the database clock, as
        "N/PERIOD" ("100/1s", "10/5m", up to a day) or (N, seconds).
        running_per_key: at most this many of one ordering key (the
        queue's keys then limit and no longer order).  rate_per_key: at
        most N of one ordering key claimed in any period, as rate is
        written (keys still order; jobs without a key are not counted).
        Counts run from 1 to 1000000000.  On an error nothing is
        changed."""
        if not isinstance(queue, str):
            raise TypeError("invalid queue %r: expected a queue name" % (queue,))
        c = N.Limits()
        c.running = _limit(running, "running limit")
        c.running_per_key = _limit(running_per_key, "running limit per key")
        if rate is not None:
            c.rate, c.rate_period_ms = _rate(self._lib, rate)
        if rate_per_key is not None:
            c.rate_per_key, c.rate_per_key_period_ms = _rate(self._lib, rate_per_key,
                                                             "rate per key")
        self._call(self._lib.jobq_set_limits, queue.encode(), ctypes.byref(c))

    def limits(self, queue=None):
        """The limits of every queue that has one, as a list of
        QueueLimits by name; or, given a queue, that queue's QueueLimits
        (its limits None when it has none)."""
        if queue is not None and not isinstance(queue, str):
            raise TypeError("invalid queue %r: expected a queue name" % (queue,))
        out = ctypes.POINTER(N.Limits)()
        n = ctypes.c_size_t()
        self._call(self._lib.jobq_limits_list, _text(queue), ctypes.byref(out), ctypes.byref(n))
        try:
            found = [_queue_limits(c) for c in out[:n.value]]
        finally:
            self._lib.jobq_limits_free(out, n.value)
        if queue is None:
            return found
        return found[0] if found else _queue_limits(N.Limits(queue=queue.encode()))

    # -- workers

    def session(self, name="python", lease=5.0):
        """Opens a worker session (claims, acknowledgements, heartbeats)
        with a lease in seconds.  Most programs want jobq.Worker, which
        does all of it; this is the library's own loop, one call at a
        time."""
        return Session(self, name, lease)

    def _watch(self, queues):
        """The file descriptor that becomes readable on a change, or None
        when the store cannot watch."""
        fd = ctypes.c_int(-1)
        try:
            self._call(self._lib.jobq_watch, ctypes.byref(fd))
        except errors.NotSupported:
            return None
        if queues:
            arr = (ctypes.c_char_p * len(queues))(*[q.encode() for q in queues])
            try:
                self._call(self._lib.jobq_watch_queues, arr, len(queues))
            except errors.NotSupported:
                pass
        return fd.value

    def _changed(self):
        return self._call(self._lib.jobq_changed) == 1


def _queue_array(queues):
    if queues is None:
        return None, 0
    if isinstance(queues, str):
        queues = [queues]
    queues = list(queues)
    return (ctypes.c_char_p * len(queues))(*[q.encode() for q in queues]), len(queues)


class Session:
    """A worker session on a Client: its lease is kept by heartbeat(), its
    claims are fenced by their claim tokens.  Close it (or use it as a
    context manager): the jobs it still holds go back to ready at once."""

    def __init__(self, client, name, lease):
        self.client = client
        lib = client._lib
        o = N.SessionOpts()
        lib.jobq_session_opts_init(ctypes.byref(o))
        o.name = str(name).encode()
        lease_ms = to_ms(lease, "lease")
        if lease_ms is not None:
            o.lease_ms = lease_ms
        self._s = ctypes.c_void_p()
        with client._lock:
            if not client._db:
                raise errors.WrongState("the jobq client is closed")
            rc = lib.jobq_session_open(client._db, ctypes.byref(o), ctypes.byref(self._s))
            if rc < 0:
                lib.jobq_session_close(self._s)
                raise client._error(rc)
            self.id = lib.jobq_session_id(self._s).decode()
            self.lease = lib.jobq_session_lease_ms(self._s) / 1000
            client._sessions.add(self)

    def _call(self, fn, *args):
        c = self.client
        with c._lock:
            if not self._s:
                raise errors.WrongState("the session is closed")
            rc = fn(self._s, *args)
            if rc < 0:
                raise c._error(rc)
            return rc

    def close(self):
        """Ends the session: the jobs it still holds go back to ready."""
        with self.client._lock:
            if self._s:
                self.client._lib.jobq_session_close(self._s)
                self._s = None
                self.client._sessions.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<jobq.Session %s lease=%gs>" % (self.id, self.lease)

    def claim(self, queues=None, max=1):
        """Claims up to max ready jobs from queues (a name, a list, or None
        for every queue) and returns them as Jobs.  Raises jobq.Identity
        when the database is not the one this client saw, jobq.Expired when
        the session is gone."""
        arr, nq = _queue_array(queues)
        out = ctypes.POINTER(N.JobStruct)()
        n = ctypes.c_size_t()
        self._call(self.client._lib.jobq_claim, arr, nq, max, ctypes.byref(out),
                   ctypes.byref(n))
        return _jobs(self.client._lib, out, n.value)

    def _ack_claim(self, acks, queues, max):
        """Acknowledges acks (a ctypes array of Ack, or None) and claims up
        to max more, in one transaction."""
        arr, nq = _queue_array(queues)
        out = ctypes.POINTER(N.JobStruct)()
        n = ctypes.c_size_t()
        self._call(self.client._lib.jobq_ack_claim, acks, len(acks) if acks else 0, arr, nq,
                   max, ctypes.byref(out), ctypes.byref(n))
        return _jobs(self.client._lib, out, n.value)

    def heartbeat(self):
        """Renews the lease; returns the ids of this session's jobs whose
        cancel was requested.  jobq.Expired when the session is gone."""
        ids = ctypes.POINTER(ctypes.c_int64)()
        n = ctypes.c_size_t()
        self._call(self.client._lib.jobq_heartbeat, ctypes.byref(ids), ctypes.byref(n))
        try:
            return list(ids[:n.value])
        finally:
            self.client._lib.jobq_free(ids)

    def set_in_flight(self, n):
        with self.client._lock:
            if self._s:
                self.client._lib.jobq_session_set_in_flight(self._s, n)

    def complete(self, job, result=None):
        """Records job as done with result (bytes, str, None or JSON).
        Returns True when an earlier identical acknowledgement had already
        committed.  jobq.Lost when the claim is gone: nothing changed."""
        data = to_bytes(result, "result")
        already = ctypes.c_int()
        self._call(self.client._lib.jobq_complete, ctypes.byref(_c_job(job)), data, len(data),
                   ctypes.byref(already))
        return bool(already.value)

    def fail(self, job, error):
        """Fails job with error as its last error: retried with backoff while
        attempts remain, else dead."""
        self._call(self.client._lib.jobq_fail, ctypes.byref(_c_job(job)),
                   str(error).encode("utf-8", "replace"))

    def retry_later(self, job, delay=None, reason=""):
        """Runs job again after delay (seconds; None: the job's backoff).
        Spends an attempt; recorded as a requested retry, not an error."""
        ms = to_ms(delay, "delay")
        self._call(self.client._lib.jobq_retry_later, ctypes.byref(_c_job(job)),
                   -1 if ms is None else ms, str(reason).encode("utf-8", "replace"))

    def release(self, job):
        """Puts job back to ready now without spending its attempt."""
        self._call(self.client._lib.jobq_release, ctypes.byref(_c_job(job)))

    def extend(self, job, seconds):
        """Confirms the claim is held and moves job's deadline to now +
        seconds.  jobq.Cancelled when an operator asked to cancel it (the
        deadline still moved), jobq.Lost when the claim is gone."""
        self._call(self.client._lib.jobq_extend, ctypes.byref(_c_job(job)),
                   to_ms(seconds, "extension"))


def _jobs(lib, out, n):
    """Copies n claimed jobs into Jobs and frees the C array."""
    try:
        jobs = []
        for i in range(n):
            c = out[i]
            jobs.append(Job(
                c.id, N.text(c.queue), N.bytes_at(c.payload, c.payload_len) or b"",
                attempt=c.attempt, max_attempts=c.max_attempts, prev_lost=bool(c.prev_lost),
                claim=c.claim.decode(), key=N.text(c.key), priority=c.priority,
                timeout=c.timeout_ms / 1000 if c.timeout_ms else None))
        return jobs
    finally:
        lib.jobq_jobs_free(out, n)


def _c_job(job):
    """The jobq_job of a Job, for the calls that acknowledge it."""
    c = N.JobStruct()
    c.id = job.id
    c.queue = job.queue.encode()
    c.attempt = job.attempt
    c.max_attempts = job.max_attempts
    c.priority = job.priority
    c.key = _text(job.key)
    c.prev_lost = 1 if job.prev_lost else 0
    c.claim = job.claim.encode()
    return c


def ack(job, kind, data=b"", retry_in_ms=None):
    """A jobq_ack for jobq_ack_many()/jobq_ack_claim(), and the buffer it
    points to (keep both until the call returns)."""
    a = N.Ack()
    a.id = job.id
    a.claim = job.claim.encode()
    a.kind = kind
    buf = None
    if data:
        buf = ctypes.create_string_buffer(data, len(data))
        a.data = ctypes.cast(buf, ctypes.c_void_p)
        a.len = len(data)
    a.retry_in_ms = -1 if retry_in_ms is None else retry_in_ms
    return a, buf


