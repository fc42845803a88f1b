"""handlers.py - the handler registry (@jobq.handler("email")) and running
one job through its handler into an outcome: done with a result, failed
with an error, or a requested retry.  The persistent worker, the
in-process worker and the testing mode all run jobs through run() here,
so a handler behaves the same under each.
"""

import asyncio
import inspect
import threading
import traceback

from .job import Fail, Retry, to_bytes, to_ms


class Outcome:
    """What became of one run of a job: state "done" (result: bytes),
    "failed" (error: str) or "retry" (delay: milliseconds or None for the
    job's backoff; reason: str)."""

    __slots__ = ("state", "result", "error", "delay_ms", "reason")

    def __init__(self, state, result=b"", error="", delay_ms=None, reason=""):
        self.state = state
        self.result = result
        self.error = error
        self.delay_ms = delay_ms
        self.reason = reason

    @property
    def text(self):
        """The result as UTF-8 text."""
        return self.result.decode("utf-8")

    def json(self):
        import json
        return json.loads(self.result)

    def __repr__(self):
        if self.state == "done":
            return "<jobq.Outcome done %r>" % (self.result[:60],)
        if self.state == "retry":
            return "<jobq.Outcome retry delay_ms=%r %r>" % (self.delay_ms, self.reason)
        return "<jobq.Outcome failed %r>" % (self.error.splitlines()[-1:] or [""])[0]


class Registry:
    """Handlers by queue name; the one registered without a queue takes the
    jobs of every other queue."""

    def __init__(self):
        self._by_queue = {}
        self._lock = threading.Lock()

    def register(self, fn, queues):
        with self._lock:
            for q in queues:
                old = self._by_queue.get(q)
                if old is not None and old is not fn:
                    where = "every other queue" if q is None else "queue '%s'" % q
                    raise ValueError("a handler for %s is already registered: %s.%s"
                                     % (where, old.__module__, old.__qualname__))
            for q in queues:
                self._by_queue[q] = fn

    def find(self, queue):
        with self._lock:
            fn = self._by_queue.get(queue)
            return fn if fn is not None else self._by_queue.get(None)

    def queues(self):
        """The queue names with a handler of their own; None when one
        handler takes every queue."""
        with self._lock:
            if None in self._by_queue:
                return None
            return sorted(self._by_queue)

    def clear(self):
        with self._lock:
            self._by_queue.clear()

    def __bool__(self):
        with self._lock:
            return bool(self._by_queue)


registry = Registry()


def handler(*queues, registry=registry):
    """Registers the decorated function as the handler of the named queues,
    or of every queue without a handler of its own when none is named:

        @jobq.handler("email")
        def send(job):
            ...
            return result          # bytes, str, None or JSON

    A handler may be an async def: it is awaited on an event loop that
    stays open for the worker's thread."""
    if len(queues) == 1 and callable(queues[0]):  # @jobq.handler without ()
        registry.register(queues[0], [None])
        return queues[0]
    for q in queues:
        if not isinstance(q, str) or not q:
            raise TypeError("invalid queue %r: expected a queue name" % (q,))

    def register(fn):
        registry.register(fn, list(queues) or [None])
        return fn
    return register


_loops = threading.local()


def _await(value):
    loop = getattr(_loops, "loop", None)
    if loop is None:
        loop = _loops.loop = asyncio.new_event_loop()

    async def wait():
        return await value
    return loop.run_until_complete(wait())


def run(job, registry=registry):
    """Runs job through its handler and returns the Outcome; never raises
    for what the handler does."""
    fn = registry.find(job.queue)
    if fn is None:
        known = registry.queues()
        return Outcome("failed", error="no handler for queue '%s': this worker has "
                       "handlers for %s" % (job.queue, ", ".join(known) if known else "none"))
    try:
        value = fn(job)
        if inspect.isawaitable(value):
            value = _await(value)
        return Outcome("done", result=to_bytes(value, "result"))
    except Retry as r:
        try:
            delay = to_ms(r.delay, "retry delay")
        except TypeError as e:
            return Outcome("failed", error=str(e))
        if delay is not None and delay < 0:
            delay = 0
        return Outcome("retry", delay_ms=delay, reason=r.reason)
    except Fail as f:
        return Outcome("failed", error=f.message)
    except Exception:
        return Outcome("failed", error=traceback.format_exc())
