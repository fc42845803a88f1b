"""job.py - what a handler sees and says: the Job it is given (id, queue,
attempt, prev_lost, claim token, key, payload), the Retry and Fail it may
raise, and how values become bytes (payloads, results) and durations
become milliseconds.  Shared by the persistent worker, the in-process
worker and the testing mode; needs no library.
"""

import datetime
import json
import math
import threading


class Retry(Exception):
    """Raise in a handler to run the job again later: after delay (seconds
    or a timedelta), or after the job's backoff when delay is None.  It
    spends an attempt, like a failure, but is recorded as a requested
    retry with reason as its note, not as an error."""

    def __init__(self, reason="", delay=None):
        super().__init__(reason)
        self.reason = str(reason)
        self.delay = delay


class Fail(Exception):
    """Raise in a handler to fail the job with message as its error, and no
    traceback.  The job is retried with its backoff while attempts remain,
    then dead, as for any other exception."""

    def __init__(self, message):
        super().__init__(message)
        self.message = str(message)


class Job:
    """One claimed job, as a handler gets it.

    id, queue, attempt (1 on the first run), max_attempts, prev_lost (the
    previous attempt's outcome is unknown: its worker died mid-run), claim
    (the claim token, different for every attempt: the key for idempotent
    side effects), key (the ordering key, or None), payload (bytes).
    In-process workers also set priority, timeout (seconds, or None) and
    cancel_requested (a threading.Event set when an operator cancels it).
    """

    __slots__ = ("id", "queue", "attempt", "max_attempts", "prev_lost", "claim", "key",
                 "payload", "priority", "timeout", "cancel_requested")

    def __init__(self, id, queue, payload=b"", *, attempt=1, max_attempts=25,
                 prev_lost=False, claim="0" * 32, key=None, priority=0, timeout=None):
        self.id = id
        self.queue = queue
        self.payload = bytes(payload)
        self.attempt = attempt
        self.max_attempts = max_attempts
        self.prev_lost = prev_lost
        self.claim = claim
        self.key = key
        self.priority = priority
        self.timeout = timeout
        self.cancel_requested = threading.Event()

    @property
    def text(self):
        """The payload as UTF-8 text."""
        return self.payload.decode("utf-8")

    def json(self):
        """The payload parsed as JSON."""
        return json.loads(self.payload)

    def __repr__(self):
        return "<jobq.Job %d queue=%r attempt=%d/%d>" % (
            self.id, self.queue, self.attempt, self.max_attempts)


def to_bytes(value, what="payload"):
    """A payload or result as bytes: bytes-like as they are, str as UTF-8,
    None as nothing, anything else as compact JSON."""
    if value is None:
        return b""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise TypeError("invalid %s %r: expected bytes, str, None or a value JSON can "
                        "encode (%s)" % (what, type(value).__name__, e)) from None


def to_ms(value, what):
    """A duration (seconds as int or float, or a timedelta) in milliseconds;
    None stays None."""
    if value is None:
        return None
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise TypeError("invalid %s %r: expected seconds (a number) or a timedelta"
                        % (what, value))
    return int(round(value * 1000))


def at_ms(value):
    """A point in time (a datetime, naive ones in local time, or Unix
    seconds) in Unix milliseconds."""
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        return int(round(value.timestamp() * 1000))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("invalid at %r: expected a datetime or Unix seconds" % (value,))
    return int(round(value * 1000))


def from_ms(ms):
    """Unix milliseconds as an aware UTC datetime; 0 as None."""
    if not ms:
        return None
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
