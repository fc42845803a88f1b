"""_sqlite.py - one SQL statement on a Client's own SQLite connection (the
sqlite3 * that jobq_native() gives), through the same libsqlite3 that
libjobq uses, so that the application's writes and jobq's puts or acks
share one transaction.  Python's sqlite3 module cannot adopt a connection
it did not open, hence these few calls of SQLite's C API.
"""

import ctypes

from . import _native as N
from . import errors

SQLITE_OK, SQLITE_ROW, SQLITE_DONE = 0, 100, 101
SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB, SQLITE_NULL = 1, 2, 3, 4, 5
TRANSIENT = ctypes.c_void_p(-1)  # SQLITE_TRANSIENT: SQLite copies the value


def _fail(lib, conn, sql, rc=None):
    msg = lib.sqlite3_errmsg(conn).decode("utf-8", "replace")
    cls = errors.Busy if rc in (5, 6) else errors.DatabaseError  # SQLITE_BUSY, _LOCKED
    return cls("statement '%s' failed: %s" % (sql[:80], msg))


def _bind(lib, stmt, i, value):
    if value is None:
        return lib.sqlite3_bind_null(stmt, i)
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        return lib.sqlite3_bind_int64(stmt, i, value)
    if isinstance(value, float):
        return lib.sqlite3_bind_double(stmt, i, value)
    if isinstance(value, str):
        data = value.encode("utf-8")
        return lib.sqlite3_bind_text(stmt, i, data, len(data), TRANSIENT)
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        return lib.sqlite3_bind_blob(stmt, i, data, len(data), TRANSIENT)
    raise TypeError("invalid SQL parameter %d %r: expected None, int, float, str or bytes"
                    % (i, value))


def _column(lib, stmt, i):
    kind = lib.sqlite3_column_type(stmt, i)
    if kind == SQLITE_INTEGER:
        return lib.sqlite3_column_int64(stmt, i)
    if kind == SQLITE_FLOAT:
        return lib.sqlite3_column_double(stmt, i)
    if kind == SQLITE_NULL:
        return None
    if kind == SQLITE_TEXT:
        p = lib.sqlite3_column_text(stmt, i)
        return ctypes.string_at(p, lib.sqlite3_column_bytes(stmt, i)).decode("utf-8", "replace")
    p = lib.sqlite3_column_blob(stmt, i)
    return ctypes.string_at(p, lib.sqlite3_column_bytes(stmt, i)) if p else b""


def execute(conn, sql, params=()):
    """Runs sql with params on conn; returns the rows as tuples."""
    if not isinstance(sql, str):
        raise TypeError("invalid sql %r: expected a str" % (sql,))
    lib = N.sqlite()
    text = sql.encode("utf-8")
    stmt = ctypes.c_void_p()
    tail = ctypes.c_void_p()
    buf = ctypes.create_string_buffer(text)
    if lib.sqlite3_prepare_v2(conn, buf, len(text) + 1, ctypes.byref(stmt),
                              ctypes.byref(tail)) != SQLITE_OK:
        raise _fail(lib, conn, sql)
    if not stmt:
        raise errors.Invalid("invalid sql '%s': expected a statement" % sql[:80])
    try:
        rest = ctypes.string_at(tail.value) if tail.value else b""
        if rest.strip().strip(b";").strip():
            raise errors.Invalid("invalid sql '%s': expected one statement, got more"
                                 % sql[:80])
        count = lib.sqlite3_bind_parameter_count(stmt)
        if isinstance(params, dict):
            for name, value in params.items():
                i = lib.sqlite3_bind_parameter_index(stmt, (":" + name).encode())
                if i == 0:
                    raise errors.Invalid("invalid SQL parameter '%s': the statement has no "
                                         ":%s" % (name, name))
                if _bind(lib, stmt, i, value) != SQLITE_OK:
                    raise _fail(lib, conn, sql)
        else:
            params = tuple(params)
            if len(params) != count:
                raise errors.Invalid("the statement takes %d parameters, %d given"
                                     % (count, len(params)))
            for i, value in enumerate(params, 1):
                if _bind(lib, stmt, i, value) != SQLITE_OK:
                    raise _fail(lib, conn, sql)
        rows = []
        ncol = lib.sqlite3_column_count(stmt)
        while True:
            rc = lib.sqlite3_step(stmt)
            if rc == SQLITE_ROW:
                rows.append(tuple(_column(lib, stmt, i) for i in range(ncol)))
            elif rc == SQLITE_DONE:
                return rows
            else:
                raise _fail(lib, conn, sql, rc)
    finally:
        lib.sqlite3_finalize(stmt)
