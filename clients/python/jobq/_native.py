"""_native.py - libjobq through ctypes: finding and loading the library, the
C structures of include/jobq.h, and the prototype of every call this
package makes.

The library is looked for once, on first use, so that importing jobq (and
running a persistent worker, which speaks only the line protocol) needs no
library at all: first the path in $JOBQ_LIBRARY, then the system's loader
path by soname (libjobq.so.0, then libjobq.so).  Only symbols declared in
include/jobq.h are used.  ctypes lets go of the GIL during each call, so a
call that waits on the database blocks only its own thread.
"""

import ctypes
import os
import threading

from . import errors

# The version of include/jobq.h this package is written for, and the
# package's own version.
HEADER_VERSION = "0.1.0"

c_int64 = ctypes.c_int64
c_int = ctypes.c_int
c_size_t = ctypes.c_size_t
c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
CLAIM_LEN = 32
LIMIT_MAX = 1000000000          # JOBQ_LIMIT_MAX
LIMIT_PERIOD_MAX = 86400000     # JOBQ_LIMIT_PERIOD_MAX, milliseconds


class PutOpts(ctypes.Structure):
    _fields_ = [
        ("queue", c_char_p),
        ("payload", c_void_p),
        ("payload_len", c_size_t),
        ("priority", c_int),
        ("delay_ms", c_int64),
        ("run_at_ms", c_int64),
        ("key", c_char_p),
        ("barrier", c_int),
        ("unique_key", c_char_p),
        ("max_attempts", c_int),
        ("timeout_ms", c_int64),
        ("backoff_ms", c_int64),
        ("after", ctypes.POINTER(c_int64)),
        ("n_after", c_size_t),
        ("after_index", ctypes.POINTER(c_size_t)),
        ("n_after_index", c_size_t),
        ("after_any_outcome", c_int),
    ]


class SessionOpts(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("lease_ms", c_int64)]


class JobStruct(ctypes.Structure):
    _fields_ = [
        ("id", c_int64),
        ("queue", c_char_p),
        ("payload", c_void_p),
        ("payload_len", c_size_t),
        ("attempt", c_int),
        ("max_attempts", c_int),
        ("priority", c_int),
        ("key", c_char_p),
        ("timeout_ms", c_int64),
        ("prev_lost", c_int),
        ("claimed_at_ms", c_int64),
        ("claim", ctypes.c_char * (CLAIM_LEN + 1)),
        ("run_at_ms", c_int64),
    ]


class Ack(ctypes.Structure):
    _fields_ = [
        ("id", c_int64),
        ("claim", ctypes.c_char * (CLAIM_LEN + 1)),
        ("kind", c_int),
        ("data", c_void_p),
        ("len", c_size_t),
        ("retry_in_ms", c_int64),
        ("status", c_int),
        ("already", c_int),
        ("outcome", c_int),
    ]


class JobInfo(ctypes.Structure):
    _fields_ = [
        ("id", c_int64),
        ("queue", c_char_p),
        ("state", c_int),
        ("priority", c_int),
        ("run_at_ms", c_int64),
        ("key", c_char_p),
        ("barrier", c_int),
        ("unique_key", c_char_p),
        ("payload", c_void_p),
        ("payload_len", c_size_t),
        ("result", c_void_p),
        ("result_len", c_size_t),
        ("attempts", c_int),
        ("max_attempts", c_int),
        ("timeout_ms", c_int64),
        ("backoff_ms", c_int64),
        ("session", c_char_p),
        ("claim", c_char_p),
        ("created_at_ms", c_int64),
        ("claimed_at_ms", c_int64),
        ("finished_at_ms", c_int64),
        ("last_error", c_char_p),
        ("cancel_requested", c_int),
        ("prev_lost", c_int),
        ("part", c_int),
    ]


class ListOpts(ctypes.Structure):
    _fields_ = [
        ("queue", c_char_p),
        ("state", c_int),
        ("scheduled", c_int),
        ("limit", c_size_t),
        ("after_id", c_int64),
        ("key", c_char_p),
    ]


class QueueStats(ctypes.Structure):
    _fields_ = [
        ("name", c_char_p),
        ("ready", c_int64),
        ("scheduled", c_int64),
        ("waiting", c_int64),
        ("running", c_int64),
        ("done", c_int64),
        ("dead", c_int64),
        ("cancelled", c_int64),
        ("paused", c_int),
        ("oldest_ready_ms", c_int64),
        ("key_policy", c_char_p),
        ("pending", c_int64),
        ("parts", c_int),
        ("parts_unowned", c_int),
    ]


class SessionInfo(ctypes.Structure):
    _fields_ = [
        ("id", c_char_p),
        ("name", c_char_p),
        ("host", c_char_p),
        ("pid", c_int64),
        ("epoch", c_int64),
        ("started_at_ms", c_int64),
        ("heartbeat_at_ms", c_int64),
        ("expires_at_ms", c_int64),
        ("lease_ms", c_int64),
        ("claimed", c_int64),
        ("in_flight", c_int64),
        ("done", c_int64),
        ("failed", c_int64),
        ("expired", c_int),
        ("parts", c_void_p),
        ("nparts", c_size_t),
    ]


class Identity(ctypes.Structure):
    _fields_ = [
        ("queue_id", ctypes.c_char * 37),
        ("epoch", c_int64),
        ("seq", c_int64),
        ("schema_version", c_int),
        ("now_ms", c_int64),
    ]


class Limits(ctypes.Structure):
    _fields_ = [
        ("queue", c_char_p),
        ("running", c_int64),
        ("rate", c_int64),
        ("rate_period_ms", c_int64),
        ("running_per_key", c_int64),
        ("rate_per_key", c_int64),
        ("rate_per_key_period_ms", c_int64),
        ("running_now", c_int64),
        ("claimed_now", c_int64),
        ("keys_full_now", c_int64),
        ("held", c_int),
    ]


# The structures by their C name, for the test that holds them against
# the header's layout.
STRUCTS = {
    "jobq_put_opts": PutOpts,
    "jobq_session_opts": SessionOpts,
    "jobq_job": JobStruct,
    "jobq_ack": Ack,
    "jobq_job_info": JobInfo,
    "jobq_list_opts": ListOpts,
    "jobq_queue_stats": QueueStats,
    "jobq_session_info": SessionInfo,
    "jobq_identity": Identity,
    "jobq_limits": Limits,
}

ACK_COMPLETE, ACK_FAIL, ACK_RETRY, ACK_RELEASE = 1, 2, 3, 4

P = ctypes.POINTER
_pp = P(c_void_p)

# name: (restype, argtypes)
PROTOTYPES = {
    "jobq_version": (c_char_p, []),
    "jobq_free": (None, [c_void_p]),
    "jobq_strerror": (c_char_p, [c_int]),
    "jobq_err_name": (c_char_p, [c_int]),
    "jobq_open": (c_int, [c_char_p, _pp]),
    "jobq_close": (None, [c_void_p]),
    "jobq_errmsg": (c_char_p, [c_void_p]),
    "jobq_warning": (c_char_p, [c_void_p]),
    "jobq_url_redact": (c_void_p, [c_char_p]),
    "jobq_init": (c_int, [c_void_p]),
    "jobq_begin": (c_int, [c_void_p]),
    "jobq_commit": (c_int, [c_void_p]),
    "jobq_rollback": (c_int, [c_void_p]),
    "jobq_native": (c_void_p, [c_void_p]),
    "jobq_put_opts_init": (None, [P(PutOpts)]),
    "jobq_put": (c_int, [c_void_p, P(PutOpts), P(c_int64), P(c_int)]),
    "jobq_put_many": (c_int, [c_void_p, P(PutOpts), c_size_t, P(c_int64), P(ctypes.c_ubyte)]),
    "jobq_session_opts_init": (None, [P(SessionOpts)]),
    "jobq_session_open": (c_int, [c_void_p, P(SessionOpts), _pp]),
    "jobq_session_close": (None, [c_void_p]),
    "jobq_session_id": (c_char_p, [c_void_p]),
    "jobq_session_lease_ms": (c_int64, [c_void_p]),
    "jobq_heartbeat": (c_int, [c_void_p, P(P(c_int64)), P(c_size_t)]),
    "jobq_session_set_in_flight": (None, [c_void_p, c_int64]),
    "jobq_claim": (c_int, [c_void_p, P(c_char_p), c_size_t, c_size_t, P(P(JobStruct)), P(c_size_t)]),
    "jobq_jobs_free": (None, [P(JobStruct), c_size_t]),
    "jobq_watch": (c_int, [c_void_p, P(c_int)]),
    "jobq_changed": (c_int, [c_void_p]),
    "jobq_watch_queues": (c_int, [c_void_p, P(c_char_p), c_size_t]),
    "jobq_ack_many": (c_int, [c_void_p, P(Ack), c_size_t]),
    "jobq_ack_claim": (c_int, [c_void_p, P(Ack), c_size_t, P(c_char_p), c_size_t, c_size_t,
                               P(P(JobStruct)), P(c_size_t)]),
    "jobq_complete": (c_int, [c_void_p, P(JobStruct), c_void_p, c_size_t, P(c_int)]),
    "jobq_fail": (c_int, [c_void_p, P(JobStruct), c_char_p]),
    "jobq_retry_later": (c_int, [c_void_p, P(JobStruct), c_int64, c_char_p]),
    "jobq_release": (c_int, [c_void_p, P(JobStruct)]),
    "jobq_extend": (c_int, [c_void_p, P(JobStruct), c_int64]),
    "jobq_state_name": (c_char_p, [c_int]),
    "jobq_state_parse": (c_int, [c_char_p]),
    "jobq_show": (c_int, [c_void_p, c_int64, P(P(JobInfo))]),
    "jobq_list": (c_int, [c_void_p, P(ListOpts), P(P(JobInfo)), P(c_size_t)]),
    "jobq_info_free": (None, [P(JobInfo), c_size_t]),
    "jobq_stats": (c_int, [c_void_p, P(P(QueueStats)), P(c_size_t)]),
    "jobq_stats_free": (None, [P(QueueStats), c_size_t]),
    "jobq_sessions": (c_int, [c_void_p, P(P(SessionInfo)), P(c_size_t)]),
    "jobq_sessions_free": (None, [P(SessionInfo), c_size_t]),
    "jobq_retry": (c_int, [c_void_p, c_int64]),
    "jobq_retry_dead": (c_int, [c_void_p, c_char_p, P(c_int64)]),
    "jobq_cancel": (c_int, [c_void_p, c_int64, P(c_int)]),
    "jobq_pause": (c_int, [c_void_p, c_char_p]),
    "jobq_resume": (c_int, [c_void_p, c_char_p]),
    "jobq_identity_get": (c_int, [c_void_p, P(Identity)]),
    "jobq_set_limits": (c_int, [c_void_p, c_char_p, P(Limits)]),
    "jobq_limits_list": (c_int, [c_void_p, c_char_p, P(P(Limits)), P(c_size_t)]),
    "jobq_limits_free": (None, [P(Limits), c_size_t]),
    "jobq_parse_duration": (c_int, [c_char_p, P(c_int64)]),
    "jobq_parse_rate": (c_int, [c_char_p, P(c_int64), P(c_int64)]),
}

_lib = None
_lock = threading.Lock()


def _candidates():
    """The names to hand to the loader, and whether they came from
    $JOBQ_LIBRARY."""
    path = os.environ.get("JOBQ_LIBRARY")
    if path:
        return [path], True
    return ["libjobq.so.0", "libjobq.so"], False


def load():
    """The loaded library with its prototypes set; loads it on first use.
    Raises errors.LibraryError, naming where it looked, when it cannot."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        names, from_env = _candidates()
        why = []
        lib = None
        for name in names:
            try:
                lib = ctypes.CDLL(name)
                break
            except OSError as e:
                why.append(str(e))
        if lib is None:
            if from_env:
                raise errors.LibraryError(
                    "cannot load libjobq from JOBQ_LIBRARY '%s': %s; expected the path of "
                    "libjobq.so (build/libjobq.so after make)" % (names[0], why[0]))
            raise errors.LibraryError(
                "cannot load libjobq: JOBQ_LIBRARY is not set and the system's loader path "
                "has neither libjobq.so.0 nor libjobq.so (%s); install jobq (make install, "
                "then ldconfig) or set JOBQ_LIBRARY to the path of libjobq.so" % why[-1])
        for name, (restype, argtypes) in PROTOTYPES.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise errors.LibraryError(
                    "the libjobq at '%s' has no %s(): it is older than this package, which "
                    "is written for libjobq %s" % (lib._name, name, HEADER_VERSION)) from None
            fn.restype = restype
            fn.argtypes = argtypes
        _lib = lib
        return lib


def version():
    """The version of the loaded library ("0.1.0")."""
    return load().jobq_version().decode()


def err_name(code):
    return load().jobq_err_name(code).decode()


def text(ptr_bytes):
    """A char * field read by ctypes (bytes or None) as str or None."""
    return None if ptr_bytes is None else ptr_bytes.decode("utf-8", "replace")


def bytes_at(ptr, length):
    """length bytes at ptr (None when ptr is NULL)."""
    if not ptr:
        return None
    return ctypes.string_at(ptr, length)


_sqlite = None


def sqlite():
    """The SQLite library that libjobq uses, for statements on a handle's
    own connection (jobq_native())."""
    global _sqlite
    if _sqlite is not None:
        return _sqlite
    load()
    try:  # the copy libjobq loaded, if it was
        lib = ctypes.CDLL("libsqlite3.so.0", mode=getattr(os, "RTLD_NOLOAD", 0) | ctypes.RTLD_GLOBAL)
    except OSError:
        lib = ctypes.CDLL("libsqlite3.so.0")
    proto = {
        "sqlite3_prepare_v2": (c_int, [c_void_p, c_char_p, c_int, _pp, _pp]),
        "sqlite3_finalize": (c_int, [c_void_p]),
        "sqlite3_step": (c_int, [c_void_p]),
        "sqlite3_errmsg": (c_char_p, [c_void_p]),
        "sqlite3_bind_parameter_count": (c_int, [c_void_p]),
        "sqlite3_bind_parameter_index": (c_int, [c_void_p, c_char_p]),
        "sqlite3_bind_null": (c_int, [c_void_p, c_int]),
        "sqlite3_bind_int64": (c_int, [c_void_p, c_int, c_int64]),
        "sqlite3_bind_double": (c_int, [c_void_p, c_int, ctypes.c_double]),
        "sqlite3_bind_text": (c_int, [c_void_p, c_int, c_char_p, c_int, c_void_p]),
        "sqlite3_bind_blob": (c_int, [c_void_p, c_int, c_void_p, c_int, c_void_p]),
        "sqlite3_column_count": (c_int, [c_void_p]),
        "sqlite3_column_type": (c_int, [c_void_p, c_int]),
        "sqlite3_column_int64": (c_int64, [c_void_p, c_int]),
        "sqlite3_column_double": (ctypes.c_double, [c_void_p, c_int]),
        "sqlite3_column_blob": (c_void_p, [c_void_p, c_int]),
        "sqlite3_column_text": (c_void_p, [c_void_p, c_int]),
        "sqlite3_column_bytes": (c_int, [c_void_p, c_int]),
        "sqlite3_changes": (c_int, [c_void_p]),
    }
    for name, (restype, argtypes) in proto.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    _sqlite = lib
    return lib
