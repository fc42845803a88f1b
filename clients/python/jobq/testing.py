"""testing.py - jobq in an application's tests, two ways:

Inline: perform() runs a queue's registered handler on a job made up on
the spot, with no database, and returns its Outcome:

    out = jobq.testing.perform("email", {"to": "ada"})
    assert out.state == "done" and out.json() == {"sent": True}

From a temporary queue: queue() gives a Client on a fresh SQLite file
that is deleted afterwards; the code under test puts jobs there, and
drain() runs them through the handlers in this process, as a worker would
(claims, acknowledgements, retries, ordering keys and all):

    with jobq.testing.queue() as q:
        signup(q, "ada")                    # puts an "email" job
        jobq.testing.drain(q)
        assert q.stats()[0].done == 1
"""

import os
import shutil
import tempfile
from contextlib import contextmanager

from .client import Client
from .handlers import registry as default_registry
from .handlers import run
from .inprocess import Worker
from .job import Job, to_bytes


def perform(queue, payload=b"", *, registry=None, **fields):
    """Runs queue's handler once on a job with payload and returns the
    Outcome (state "done", "failed" or "retry").  fields set the job's
    other attributes: id, attempt, max_attempts, prev_lost, claim, key,
    priority, timeout."""
    fields.setdefault("id", 1)
    job = Job(fields.pop("id"), queue, to_bytes(payload), **fields)
    return run(job, registry if registry is not None else default_registry)


@contextmanager
def queue():
    """A Client on a new SQLite queue file in a temporary directory, which
    is removed when the block ends."""
    tmp = tempfile.mkdtemp(prefix="jobq-test-")
    try:
        with Client("sqlite:" + os.path.join(tmp, "queue.db")) as q:
            yield q
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def drain(client, queues=None, *, concurrency=1, scheduled=False, registry=None):
    """Works the jobs of client's database through the registered handlers
    until no job is ready and none runs; with scheduled=True, until nothing
    is ready, scheduled (delays, retries' backoff) or waiting either.
    Returns the counts of outcomes (done, failed, retry, lost)."""
    worker = Worker(client.url, queues, concurrency, name="jobq.testing", poll=0.05,
                    registry=registry)
    return worker.run(until="empty" if scheduled else "idle")
