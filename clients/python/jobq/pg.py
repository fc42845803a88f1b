"""pg.py - enqueueing on PostgreSQL in the application's own transaction,
through the jobq_put() SQL function (docs/sql.md) on a psycopg2 or psycopg
(3) connection or cursor: the job exists when, and only when, that
transaction commits.  Needs no libjobq.

    with conn:                               # psycopg2: commit on success
        with conn.cursor() as cur:
            cur.execute("INSERT INTO orders(id) VALUES (%s)", (7,))
            jobq.pg.put(cur, "email", {"order": 7})

jobq's tables must be on the connection's search_path (the `schema=`
option of a jobq URL names their schema; public by default).
"""

from .job import at_ms, to_bytes, to_ms

# put()'s arguments by the name of the SQL function's parameter.
_SQL_ARGS = (
    ("priority", "priority"),
    ("key", "order_key"),
    ("barrier", "barrier"),
    ("unique", "unique_key"),
    ("max_attempts", "max_attempts"),
    ("timeout", "timeout_ms"),
    ("backoff", "backoff_ms"),
)


def put_sql(queue, payload=b"", *, key=None, unique=None, priority=None, delay=None, at=None,
            max_attempts=None, timeout=None, backoff=None, barrier=False):
    """The statement and parameters that enqueue one job, for any DB-API
    driver with the %s parameter style.  The arguments are put()'s, but
    after and after_any_outcome."""
    if not isinstance(queue, str):
        raise TypeError("invalid queue %r: expected a queue name" % (queue,))
    if delay is not None and at is not None:
        raise ValueError("a delay and an at time were both given: expected one")
    values = {"priority": priority, "key": key, "barrier": True if barrier else None,
              "unique": unique, "max_attempts": max_attempts,
              "timeout": to_ms(timeout, "timeout"), "backoff": to_ms(backoff, "backoff")}
    sql = ["SELECT jobq_put(%s, %s"]
    params = [queue, to_bytes(payload)]
    for name, sql_name in _SQL_ARGS:
        if values[name] is not None:
            sql.append(", %s => %%s" % sql_name)
            params.append(values[name])
    if delay is not None:
        sql.append(", delay_ms => %s")
        params.append(to_ms(delay, "delay"))
    elif at is not None:
        # The function's own clock: the statement's start on the server.
        sql.append(", delay_ms => greatest(0, %s::bigint"
                   " - floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint)")
        params.append(at_ms(at))
    sql.append(")")
    return "".join(sql), params


def put(conn_or_cursor, queue, payload=b"", **options):
    """Enqueues one job in the transaction of conn_or_cursor (a psycopg2 or
    psycopg connection or cursor) and returns its id: the existing job's id
    when its unique key is held.  The options are those of Client.put()
    but after and after_any_outcome: the SQL function puts no
    dependencies.
    An invalid argument raises the driver's error (SQLSTATE 22023)."""
    sql, params = put_sql(queue, payload, **options)
    if hasattr(conn_or_cursor, "fetchone"):
        conn_or_cursor.execute(sql, params)
        return conn_or_cursor.fetchone()[0]
    cur = conn_or_cursor.cursor()
    try:
        cur.execute(sql, params)
        return cur.fetchone()[0]
    finally:
        cur.close()
