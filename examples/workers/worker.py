#!/usr/bin/env python3
"""worker.py - a persistent jobq worker in Python, on the jobq package
(clients/python; see docs/clients/python.md):

    jobq work --persistent -c 4 -- python3 examples/workers/worker.py

The package speaks the line protocol of docs/worker-protocol.md: "ready"
once, then one "done", "fail" or "retry" reply per job, with bytes
(keys, payloads, results, errors) in base64, so they may be anything.
Whatever the handler prints goes to stderr.  An exception fails the job
with its traceback; jobq.Fail fails it with a message alone.  It exits
when stdin ends, dropping a last line that has no newline: the foreman
died while writing it, and it is no whole job.

handle() is the part to replace.  What it does here is an example, and
what the tests check:
    fail...     fails, with the payload in the error
    retry       asks to run again in 100 ms on attempt 1 (a requested retry:
                it spends an attempt, but is not recorded as an error),
                done on attempt 2
    sleep:MS    sleeps MS milliseconds, then done
    crash       exits with status 3 in the middle of the job
    anything    done, with the payload as the result (an echo)
"""
import os
import sys
import time

# The package of this checkout, when it is not installed.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                             "clients", "python"))
import jobq  # noqa: E402


@jobq.handler()  # every queue
def handle(job):
    """Does the job; returns the result as bytes, or raises."""
    p = job.payload
    if p.startswith(b"fail"):
        raise jobq.Fail("failed on purpose: " + p[:100].decode(errors="replace"))
    if p == b"retry":
        if job.attempt == 1:
            raise jobq.Retry("not yet", delay=0.1)
        return b"retried"
    if p.startswith(b"sleep:"):
        ms = int(p[6:])
        time.sleep(ms / 1000)
        return b"slept %d ms" % ms
    if p == b"crash":
        print("worker.py: crashing on job %d on purpose" % job.id, file=sys.stderr)
        sys.exit(3)
    return p


if __name__ == "__main__":
    # Expensive set-up (connections, models) goes before this line: no job
    # comes before it.
    jobq.serve()
