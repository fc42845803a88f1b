"""inprocess.py - jobq.Worker: handlers run in this process, with no
foreman.  One thread (the one that calls run()) owns the client and its
session: it claims, acknowledges finished jobs together with the next
claim in one transaction (jobq_ack_claim), heartbeats every lease/3 and
sleeps on the database's wake-ups (jobq_watch) or a poll timer.  Handlers
run on a pool of `concurrency` threads; the library call of each claim or
acknowledgement lets go of the GIL while it waits on the database.

A thread cannot be killed, so a job's timeout is not enforced here and a
cancel request only sets job.cancel_requested: use `jobq work` with the
persistent worker (python3 -m jobq.worker) when jobs must be stopped.
"""

import collections
import logging
import os
import queue
import select
import signal
import threading
import time
import traceback

from . import _native as N
from . import errors
from .client import Client, ack
from .handlers import Outcome
from .handlers import registry as default_registry
from .handlers import run as run_job

log = logging.getLogger("jobq")

_KINDS = {"done": N.ACK_COMPLETE, "failed": N.ACK_FAIL, "retry": N.ACK_RETRY}
_TEMPORARY = (errors.Busy, errors.Unreachable)


class Worker:
    """Claims jobs of queues (default: the queues that have handlers, or
    every queue when a handler takes all) and runs them through the
    registered handlers, concurrency at a time.

        jobq.Worker("sqlite:jobq.db", ["email"], concurrency=4).run()

    run() returns after stop() (or SIGTERM/SIGINT when run in the main
    thread): claiming stops, running jobs finish and are acknowledged; a
    second stop() (or signal) returns at once, and the jobs still running
    go back to the queue.
    run(until="idle") returns once no job is ready and none runs;
    run(until="empty") once nothing is ready, scheduled, waiting or running
    (as `jobq work --until-empty`).  .counts says what became of the jobs."""

    def __init__(self, url=None, queues=None, concurrency=1, *, lease=5.0, name="python",
                 poll=1.0, registry=None):
        if isinstance(queues, str):
            queues = [queues]
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError("invalid concurrency %r: expected 1 or more" % (concurrency,))
        self.url = url
        self.registry = registry if registry is not None else default_registry
        self.queues = list(queues) if queues is not None else None
        self.concurrency = concurrency
        self.lease = lease
        self.name = name
        self.poll = poll
        self.counts = collections.Counter()
        self._stop = threading.Event()
        self._abandon = False
        self._finished = collections.deque()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)

    def stop(self):
        """Stops claiming; run() returns once the running jobs are done.  A
        second stop() returns without waiting for them: the jobs the
        session still holds go back to the queue.  Safe from any thread and
        from a signal handler."""
        if self._stop.is_set():
            self._abandon = True
        self._stop.set()
        self._wake()

    def _wake(self):
        try:
            os.write(self._wake_w, b"x")
        except BlockingIOError:
            pass

    def _queues(self):
        if self.queues is not None:
            return self.queues
        return self.registry.queues()  # None: every queue

    def run(self, until=None):
        if until not in (None, "idle", "empty"):
            raise ValueError("invalid until %r: expected None, 'idle' or 'empty'" % (until,))
        if not self.registry:
            raise ValueError("no handlers are registered: decorate a function with "
                             "@jobq.handler(\"queue\") first")
        self._stop.clear()
        self._abandon = False
        old = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                old[sig] = signal.signal(sig, lambda *_: self.stop())
        try:
            with Client(self.url) as client:
                self._loop(client, until)
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)
        return self.counts

    def _loop(self, client, until):
        queues = self._queues()
        session = client.session(self.name, self.lease)
        watch = client._watch(queues)
        running = {}
        pending = []  # (job, Ack, buffer) to acknowledge
        beat_every = session.lease / 3
        next_beat = time.monotonic() + beat_every
        claim_now = True
        # Daemon threads: a second stop() leaves a handler that never ends
        # behind, and the process can still exit.
        todo = queue.SimpleQueue()
        threads = [threading.Thread(target=self._serve, args=(todo,), daemon=True,
                                    name="jobq-worker-%d" % (i + 1))
                   for i in range(self.concurrency)]
        for t in threads:
            t.start()
        try:
            while True:
                while self._finished:
                    job, outcome = self._finished.popleft()
                    running.pop(job.id, None)
                    self.counts[outcome.state] += 1
                    data = outcome.result if outcome.state == "done" else (
                        outcome.reason if outcome.state == "retry" else outcome.error
                    ).encode("utf-8", "replace")
                    a, buf = ack(job, _KINDS[outcome.state], data, outcome.delay_ms)
                    pending.append((job, a, buf))
                free = 0 if self._stop.is_set() else self.concurrency - len(running)
                if pending or (claim_now and free > 0):
                    try:
                        jobs = self._ack_claim(session, pending, queues, free)
                    except errors.Expired:
                        log.warning("jobq: the session %s expired: its %d running jobs will "
                                    "run again elsewhere; opening a new session",
                                    session.id, len(running))
                        self.counts["lost"] += len(pending)
                        pending = []
                        session.close()
                        session = client.session(self.name, self.lease)
                        continue
                    except _TEMPORARY as e:
                        log.warning("jobq: %s; trying again in %gs", e, self.poll)
                        self._sleep(self.poll)
                        continue
                    pending = []
                    for job in jobs:
                        running[job.id] = job
                        todo.put(job)
                    claim_now = len(jobs) == free and free > 0
                    if not jobs and not running and not self._finished and until:
                        if until == "idle" or self._empty(client, queues):
                            break
                    session.set_in_flight(len(running))
                if self._stop.is_set() and (self._abandon or not running and not self._finished):
                    break
                now = time.monotonic()
                if now >= next_beat:
                    next_beat = now + beat_every
                    try:
                        for job_id in session.heartbeat():
                            if job_id in running:
                                running[job_id].cancel_requested.set()
                    except errors.Expired:
                        continue  # the next claim opens a new session
                    except _TEMPORARY as e:
                        log.warning("jobq: heartbeat: %s", e)
                can_claim = (claim_now and not self._stop.is_set()
                             and len(running) < self.concurrency)
                if self._finished or can_claim:
                    continue
                claim_now = self._wait(client, watch, min(self.poll, next_beat - now))
        finally:
            for t in threads:
                todo.put(None)
            if not self._abandon:
                for t in threads:
                    t.join()
            session.close()

    def _ack_claim(self, session, pending, queues, free):
        """Acknowledges pending and claims up to free jobs in one
        transaction.  A result the library refuses (too big) fails its job
        instead, and the others are acknowledged."""
        acks = (N.Ack * len(pending))(*[a for _, a, _ in pending]) if pending else None
        try:
            jobs = session._ack_claim(acks, queues, free)
        except (errors.Invalid, errors.TooBig):
            if len(pending) == 0:
                raise
            jobs = []
            for job, a, buf in pending:
                try:
                    one = (N.Ack * 1)(a)
                    session._ack_claim(one, queues, 0)
                    self._log_lost(job, one[0])
                except (errors.Invalid, errors.TooBig) as e:
                    self.counts["done" if a.kind == N.ACK_COMPLETE else "failed"] -= 1
                    self.counts["failed"] += 1
                    msg = ("the handler's outcome was refused: %s" % e).encode()
                    b, _ = ack(job, N.ACK_FAIL, msg)
                    session._ack_claim((N.Ack * 1)(b), queues, 0)
            return jobs
        for i, (job, _, _) in enumerate(pending):
            self._log_lost(job, acks[i])
        return jobs

    def _log_lost(self, job, a):
        if a.status == errors.Lost.code:
            self.counts["lost"] += 1
            log.warning("jobq: job %d: the claim was lost before its outcome was recorded "
                        "(it ran past its session's lease): it runs again", job.id)

    def _serve(self, todo):
        """A handler thread: runs the jobs it is given until None."""
        for job in iter(todo.get, None):
            self._run(job)

    def _run(self, job):
        try:
            outcome = run_job(job, self.registry)
        except BaseException:  # SystemExit and the like: the job failed, the worker goes on
            outcome = Outcome("failed", error=traceback.format_exc())
        if outcome.state == "failed":
            log.info("jobq: job %d (%s) failed: %s", job.id, job.queue,
                     outcome.error.strip().splitlines()[-1:] or "")
        self._finished.append((job, outcome))
        self._wake()

    def _empty(self, client, queues):
        for s in client.stats():
            if s.paused or (queues is not None and s.name not in queues):
                continue
            if s.ready or s.scheduled or s.waiting or s.running:
                return False
        return True

    def _drain_wake(self):
        try:
            while os.read(self._wake_r, 512):
                pass
        except BlockingIOError:
            pass

    def _sleep(self, seconds):
        select.select([self._wake_r], [], [], seconds)
        self._drain_wake()

    def _wait(self, client, watch, timeout):
        """Sleeps until a job finishes, the database changes or timeout;
        returns whether to claim."""
        fds = [self._wake_r] + ([watch] if watch is not None else [])
        ready, _, _ = select.select(fds, [], [], max(0.0, timeout))
        self._drain_wake()
        if watch is not None and watch in ready:
            try:
                client._changed()
            except errors.Error:
                pass
            return True  # a wake-up is a hint: claim to find out
        return not ready  # the poll timer: claim; a finished job: ack first
