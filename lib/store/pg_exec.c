/*
 * pg_exec.c - the PostgreSQL store's executor: its own statements, the
 * errors of the server mapped onto jobq's, columns bound as binary arrays,
 * statements prepared once per connection, and the statements a
 * transaction of the library's own holds to send with the next one, the
 * BEGIN with the first and the COMMIT with a claim (one round trip).
 */
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "store/pg.h"

/* ---------------------------------------------------------------- statements */



/* Whether the planner's count of a table's rows, C.reltuples, is under a
 * tenth of what the statistics collector counts live, S.n_live_tup (and
 * that is 200 or more). */
#define COUNT_BEHIND(C, S) "(" S ".n_live_tup >= 200 AND " C ".reltuples * 10 < " S ".n_live_tup)"

/* A row when this role may analyze and vacuum the hot table (see
 * refresh_stats): whether the planner's count of its rows fell behind
 * (COUNT_BEHIND), or is under a tenth of $1 jobs that the last claim
 * took (there is no count: -1, a table never vacuumed nor analyzed, as
 * after jobq init); with $2 > 0 (this handle may start a vacuum), whether
 * it has 20000 dead rows or more, no vacuum at work and the vacuums' lock
 * was free, now held, taken with function lock; the planner's count; and
 * whether its count of the archive's rows fell behind. */
#define TABLE_STATS(lock)                                                               \
  "SELECT " COUNT_BEHIND("c", "s") " OR ($1 > 0 AND c.reltuples * 10 < $1), "           \
  "CASE WHEN $2 > 0 AND s.n_dead_tup >= "                                               \
  "20000 AND NOT EXISTS (SELECT 1 FROM pg_stat_progress_vacuum v WHERE "                \
  "v.relid = c.oid) THEN " lock "(" VACUUM_LOCK_KEY ") ELSE false END, "                \
  "c.reltuples::bigint, coalesce((SELECT " COUNT_BEHIND("dc", "ds") " FROM pg_class dc " \
  "JOIN pg_stat_user_tables ds ON ds.relid = dc.oid WHERE dc.oid = "                    \
  "'jobq_done'::regclass), false) FROM pg_class c JOIN pg_stat_user_tables s ON "       \
  "s.relid = c.oid WHERE c.oid = 'jobq_jobs'::regclass AND "                            \
  "pg_has_role(c.relowner, 'MEMBER')"

static const char *const own_sql[] = {
    [PG_LOCK_SHARED - JOBQ_STMT_COUNT] =
        "SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0))",
    [PG_LOCK - JOBQ_STMT_COUNT] = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
    /* The locks named $1, exclusive where $2 says 1, in that order. */
    [PG_LOCKS - JOBQ_STMT_COUNT] =
        "SELECT CASE WHEN x.e = 1 THEN pg_advisory_xact_lock(hashtextextended(x.name, 0)) "
        "ELSE pg_advisory_xact_lock_shared(hashtextextended(x.name, 0)) END FROM (SELECT "
        "u.name, u.e FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS u(name, e, n) "
        "ORDER BY u.n) x",
    [PG_NOTIFY - JOBQ_STMT_COUNT] =
        "SELECT pg_notify('jobq', q) FROM unnest($1::text[]) q",
    /* The lock held by the connection until vacuum_unlock. */
    [PG_TABLE_STATS - JOBQ_STMT_COUNT] = TABLE_STATS("pg_try_advisory_lock"),
    /* The same, the lock held to the end of the look's transaction:
     * through a pooler in transaction mode, a lock of the session's
     * would stay on a server connection that other clients get next. */
    [PG_TABLE_STATS_XACT - JOBQ_STMT_COUNT] = TABLE_STATS("pg_try_advisory_xact_lock"),
    /* What setup (pg_connect.c) sets on a connection of its own, for the
     * transaction only: the schema $1, the statement and lock timeout $2,
     * and, where $3, a transaction that only reads. */
    [PG_SETTINGS - JOBQ_STMT_COUNT] =
        "SELECT set_config('search_path', $1, true), set_config('statement_timeout', $2, "
        "true), set_config('lock_timeout', $2, true), "
        "set_config('idle_in_transaction_session_timeout', '60s', true), "
        "set_config('synchronous_commit', 'on', true), set_config('plan_cache_mode', "
        "'force_generic_plan', true), set_config('jit', 'off', true), CASE WHEN "
        "$3::boolean THEN set_config('transaction_read_only', 'on', true) END",
};

/* What each statement does, for messages. */
static const char *stmt_what(int id) {
  switch (id) {
    case PG_LOCK_SHARED:
    case PG_LOCK: return "taking a queue's lock";
    case PG_LOCKS: return "taking the locks";
    case PG_NOTIFY: return "sending wake-ups";
    case PG_TABLE_STATS:
    case PG_TABLE_STATS_XACT: return "reading the job table's statistics";
    case PG_SETTINGS: return "making the transaction's settings";
    default: return jobq__sql_what(id);
  }
}

/* ---------------------------------------------------------------- errors */

/* The first line of libpq's message. */
const char *pg_first_line(const char *msg, char *buf, size_t len) {
  if (msg == NULL || *msg == '\0') return "no message";
  size_t n = strcspn(msg, "\n");
  snprintf(buf, len, "%.*s", (int)n, msg);
  return buf;
}

/* The start of the names of the roles of pg_roles(): jobq_, or
 * jobq_SCHEMA_ for a schema of its own. */
const char *pg_role_prefix(const pg *c, char *buf, size_t len) {
  if (strcmp(c->schema, "public") == 0)
    snprintf(buf, len, "jobq_");
  else
    snprintf(buf, len, "jobq_%s_", c->schema);
  return buf;
}

/* Records a failed statement (res may be NULL: a connection failure) as
 * a jobq error, with retry set where running the whole transaction again
 * may succeed. */
int pg_fail(jobq *db, PGresult *res, const char *what) {
  pg *c = pg_conn(db);
  char line[400];
  const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  const char *msg = pg_first_line(res ? PQresultErrorMessage(res) : PQerrorMessage(c->conn),
                               line, sizeof line);
  if (PQstatus(c->conn) != CONNECTION_OK || state == NULL ||
      strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0)
    return jobq__fail(db, JOBQ_ECONN, "%s: lost the connection to '%s': %s", what,
                      c->redacted, msg);
  if (strcmp(state, "40P01") == 0 || strcmp(state, "40001") == 0) {
    db->retry = 1;
    return jobq__fail(db, JOBQ_EBUSY, "%s: %s: try again", what, msg);
  }
  if (strcmp(state, "55P03") == 0 || strcmp(state, "57014") == 0)
    return jobq__fail(db, JOBQ_EBUSY, "%s: %s: try again", what, msg);
  if (strcmp(state, "25006") == 0)
    return jobq__fail(db, JOBQ_EREADONLY, "%s: '%s' is read-only: %s", what, c->redacted,
                      msg);
  if (strcmp(state, "42501") == 0) {
    /* Permission denied, or a row the role's policy does not take. */
    char prefix[80];
    const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    return jobq__denied(db, what, primary ? primary : msg,
                        pg_role_prefix(c, prefix, sizeof prefix));
  }
  if (strcmp(state, "53100") == 0)
    return jobq__fail(db, JOBQ_EDB, "%s: the disk of '%s' is full: %s", what, c->redacted,
                      msg);
  if (strcmp(state, "53300") == 0)
    return jobq__fail(db, JOBQ_ECONN, "%s: '%s' has too many connections: %s", what,
                      c->redacted, msg);
  /* The statements this connection prepared are gone, or another's are
   * there: the server connection changed hands. */
  if (strcmp(state, "26000") == 0 || strcmp(state, "42P05") == 0)
    return jobq__fail(db, JOBQ_EDB,
                      "%s: %s: the server connection is shared with other clients, as "
                      "behind a pooler in transaction mode; jobq needs a connection of its "
                      "own (a pooler in session mode), or pooler=transaction in the url",
                      what, msg);
  return jobq__fail(db, JOBQ_EDB, "%s: %s (SQLSTATE %s)", what, msg, state);
}

/* Runs SQL without parameters (transaction control, settings). */
int pg_run_plain(jobq *db, const char *sql, const char *what) {
  PGresult *res = PQexec(pg_conn(db)->conn, sql);
  ExecStatusType st = PQresultStatus(res);
  int rc = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? JOBQ_OK : pg_fail(db, res, what);
  PQclear(res);
  return rc;
}

/* ---------------------------------------------------------------- binary arrays */


/* Room for cap bytes in all. */
static void arr_reserve(array *a, size_t cap) {
  if (a->failed || cap <= a->cap) return;
  char *q = realloc(a->p, cap);
  if (q == NULL) {
    a->failed = 1;
    return;
  }
  a->p = q;
  a->cap = cap;
}

static void arr_put(array *a, const void *p, size_t n) {
  if (a->len + n > a->cap) arr_reserve(a, (a->len + n) * 2 + 64);
  if (a->failed) return;
  memcpy(a->p + a->len, p, n);
  a->len += n;
}

static void arr_i32(array *a, int32_t v) {
  uint32_t be = htobe32((uint32_t)v);
  arr_put(a, &be, 4);
}

void pg_arr_begin(array *a, uint32_t oid, size_t n) {
  memset(a, 0, sizeof *a);
  arr_i32(a, 1);           /* dimensions */
  arr_i32(a, 0);           /* no NULLs */
  arr_i32(a, (int32_t)oid);
  arr_i32(a, (int32_t)n);  /* length */
  arr_i32(a, 1);           /* lower bound */
}

void pg_arr_int8(array *a, int64_t v) {
  uint64_t be = htobe64((uint64_t)v);
  arr_i32(a, 8);
  arr_put(a, &be, 8);
}

void pg_arr_bytes(array *a, const void *p, size_t n) {
  arr_i32(a, (int32_t)n);
  if (n > 0) arr_put(a, p, n);
}

/* A NULL element (the header's flag is a hint the server need not have). */
static void arr_null(array *a) { arr_i32(a, -1); }

jobq_val pg_arr_val(const array *a) { return (jobq_val){.type = 'a', .p = a->p, .len = a->len}; }

/* A column of a set statement (V_COL, lib/sql.h) as an array of its
 * kind: bigint, text, bytea or tid. */
static void arr_column(array *a, const jobq_val *col) {
  const jobq_val *v = col->p;
  uint32_t oid = col->i == 'i' ? OID_INT8 : col->i == 'b' ? OID_BYTEA : col->i == 'r' ? OID_TID
                                                                                      : OID_TEXT;
  pg_arr_begin(a, oid, col->len);
  /* Its size at once, not doubled up to it. */
  size_t size = a->len;
  for (size_t i = 0; i < col->len; i++)
    size += 4 + (v[i].type == 'n' ? 0 : v[i].type == 'i' ? 8 : v[i].len);
  arr_reserve(a, size);
  for (size_t i = 0; i < col->len; i++) {
    if (v[i].type == 'n')
      arr_null(a);
    else if (v[i].type == 'i')
      pg_arr_int8(a, v[i].i);
    else
      pg_arr_bytes(a, v[i].p, v[i].len);
  }
}

/* ---------------------------------------------------------------- executor */

/* The name statement id is prepared under. */
static const char *stmt_name(char buf[16], int id) {
  snprintf(buf, 16, "jobq%d", id);
  return buf;
}

/* Spells statement id and prepares it on the connection, once; through a
 * pooler in transaction mode, where a prepared statement would stay on a
 * server connection that the next transaction may not get, it keeps the
 * text to send with the values, as an unnamed statement, every time. */
int pg_prepare(jobq *db, int id) {
  pg *c = pg_conn(db);
  if (c->prepared[id] || c->text[id] != NULL) return JOBQ_OK;
  char *text = id < JOBQ_STMT_COUNT
                   ? jobq__sql_text(JOBQ_DIALECT_PG, id, NULL, NULL)
                   : jobq__sql_spell(JOBQ_DIALECT_PG, own_sql[id - JOBQ_STMT_COUNT], NULL, NULL);
  if (text == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  int most = 0;
  for (const char *p = text; (p = strchr(p, '$')) != NULL;) {
    char *end;
    long k = strtol(++p, &end, 10);
    if (end != p && k > most) most = (int)k;
  }
  c->params[id] = (unsigned char)most;
  if (c->pooled) {
    c->text[id] = text;
    return JOBQ_OK;
  }
  char name[16];
  PGresult *res = PQprepare(c->conn, stmt_name(name, id), text, 0, NULL);
  free(text);
  int rc = JOBQ_OK;
  if (PQresultStatus(res) != PGRES_COMMAND_OK) {
    char what[64];
    snprintf(what, sizeof what, "preparing the statement for %s", stmt_what(id));
    rc = pg_fail(db, res, what);
  } else {
    c->prepared[id] = 1;
  }
  PQclear(res);
  return rc;
}

/* PG_SETTINGS with its values, which point into db's connection. */
static sendable settings(jobq *db) {
  pg *c = pg_conn(db);
  c->set_values[0] = c->set_path;
  c->set_values[1] = c->set_timeout;
  c->set_values[2] = db->readonly ? "t" : "f";
  return (sendable){PG_SETTINGS, NULL, 3, c->set_values, NULL, NULL};
}

void pg_later_clear(pg *c) {
  for (int i = 0; i < c->nlater; i++) free(c->later[i].copy);
  c->nlater = 0;
}

/* Holds statement id with its values for the next round trip; 0 when it
 * cannot wait (the list is full, or out of memory) and must run now. */
int pg_later_add(pg *c, int id, int n, const char *const *values, const int *lengths,
                     const int *formats, const jobq_how *how) {
  if (c->nlater == MAX_LATER) return 0;
  size_t size = 0;
  for (int i = 0; i < n; i++) size += values[i] ? (size_t)lengths[i] + 1 : 0;
  later *l = &c->later[c->nlater];
  l->copy = malloc(size ? size : 1);
  if (l->copy == NULL) return 0;
  l->id = id;
  l->n = n;
  l->late = how->late;
  l->ids = how->ids;
  l->nids = how->nids;
  char *p = l->copy;
  for (int i = 0; i < n; i++) {
    l->lengths[i] = lengths[i];
    l->formats[i] = formats[i];
    l->values[i] = NULL;
    if (values[i] == NULL) continue;
    /* Text values are read up to their NUL: it is copied too. */
    memcpy(p, values[i], (size_t)lengths[i]);
    p[lengths[i]] = '\0';
    l->values[i] = p;
    p += lengths[i] + 1;
  }
  c->nlater++;
  return 1;
}

/* Sends q, prepared or with its text (pooled). */
static int send_one(pg *c, const sendable *q) {
  char name[16];
  if (q->id < 0) return PQsendQueryParams(c->conn, q->sql, 0, NULL, NULL, NULL, NULL, 0);
  if (c->pooled)
    return PQsendQueryParams(c->conn, c->text[q->id], q->n, NULL, q->values, q->lengths,
                             q->formats, 1);
  return PQsendQueryPrepared(c->conn, stmt_name(name, q->id), q->n, q->values, q->lengths,
                             q->formats, 1);
}

/* Runs q, prepared or with its text (pooled): its result. */
static PGresult *exec_one(pg *c, const sendable *q) {
  char name[16];
  if (q->id < 0) return PQexec(c->conn, q->sql);
  if (c->pooled)
    return PQexecParams(c->conn, c->text[q->id], q->n, NULL, q->values, q->lengths,
                        q->formats, 1);
  return PQexecPrepared(c->conn, stmt_name(name, q->id), q->n, q->values, q->lengths,
                        q->formats, 1);
}

/* Reads the results of one statement of a pipeline up to its end (NULL):
 * the first, the others cleared. */
static PGresult *pipeline_result(PGconn *pc) {
  PGresult *first = NULL, *r;
  while ((r = PQgetResult(pc)) != NULL) {
    if (first == NULL)
      first = r;
    else
      PQclear(r);
  }
  return first;
}

/* The n statements of q in one round trip (libpq's pipeline mode): res[i]
 * gets the result of q[i], NULL when it could not be sent.  A statement
 * after one that failed does not run (PGRES_PIPELINE_ABORTED). */
static void pipeline(pg *c, const sendable *q, size_t n, PGresult **res) {
  PGconn *pc = c->conn;
  for (size_t i = 0; i < n; i++) res[i] = NULL;
  if (!PQenterPipelineMode(pc)) return;
  size_t sent = 0;
  while (sent < n && send_one(c, &q[sent])) sent++;
  if (sent == n && PQpipelineSync(pc)) {
    for (size_t i = 0; i < n; i++) res[i] = pipeline_result(pc);
    PQclear(PQgetResult(pc)); /* PGRES_PIPELINE_SYNC */
  }
  PQexitPipelineMode(pc);
}

static int result_ok(const PGresult *res) {
  ExecStatusType st = PQresultStatus(res);
  return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}


/* Nothing of a lazy transaction reached the server, and its connection
 * turned out broken: it is made again, and the transaction fails, to be
 * run again from its start by the library (db->retry), so that the
 * checks the library makes on a connection made again (lib/mark.c,
 * lib/session.c) come before its statements.  The failure is reported
 * when the connection cannot be made. */
static int pg_restart(jobq *db) {
  pg *c = pg_conn(db);
  c->begin_pending = 0;
  pg_later_clear(c);
  int rc = pg_reconnect(db);
  if (rc != JOBQ_OK) return rc;
  db->retry = 1;
  return jobq__fail(db, JOBQ_ECONN,
                    "the connection to '%s' was broken and is made again: run the "
                    "transaction again",
                    c->redacted);
}


static int int64_cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The ids an INSERT of nids jobs returned, into ids in the order of the
 * jobs: the rows come back in no promised order, and the ids were given
 * in the order of the rows inserted, which is the jobs'. */
static int insert_ids(jobq *db, PGresult *res, int64_t *ids, size_t nids) {
  jobq_rows r = {res, 0, PQntuples(res)};
  if ((size_t)r.nrows != nids)
    return jobq__fail(db, JOBQ_EDB, "putting %zu jobs returned %d ids", nids, r.nrows);
  for (; r.row < r.nrows; r.row++) ids[r.row] = pg_col_int(&r, 0);
  qsort(ids, nids, sizeof *ids, int64_cmp);
  return JOBQ_OK;
}

static const char *sent_what(const sendable *q) {
  if (q->id >= 0) return stmt_what(q->id);
  return strcmp(q->sql, "COMMIT") == 0 ? "committing" : "starting a transaction";
}

/* Runs q, after what waits to be sent (a lazy BEGIN, the statements held
 * for later), all in one round trip.  With commit_with, what is held for
 * the commit goes after q, then COMMIT (committed tells that it went
 * through).  *res gets q's result, which may be an error; the failure of
 * a statement sent before it is returned, with its message (*res NULL),
 * as is one after it.  A BEGIN that found the connection broken did
 * nothing: the transaction runs again on a connection made again
 * (restart). */
int pg_exec_pending(jobq *db, const sendable *q, PGresult **res) {
  pg *c = pg_conn(db);
  *res = NULL;
  /* Through a pooler in transaction mode, every transaction makes its
   * settings first: after its BEGIN, or before a statement that runs
   * alone, whose round trip is then one transaction. */
  int set = c->pooled &&
            (c->begin_pending || PQtransactionStatus(c->conn) == PQTRANS_IDLE);
  if (!set && !c->begin_pending && c->nlater == 0 && !c->commit_with) {
    *res = exec_one(c, q);
    return JOBQ_OK;
  }
  int rc = set ? pg_prepare(db, PG_SETTINGS) : JOBQ_OK;
  if (rc != JOBQ_OK) return rc;
  sendable all[MAX_LATER + 4];
  PGresult *got[MAX_LATER + 4];
  size_t k = 0;
  int begin = c->begin_pending;
  c->begin_pending = 0;
  if (begin) all[k++] = (sendable){.id = -1, .sql = "BEGIN"};
  if (set) all[k++] = settings(db);
  const size_t lead = k; /* the BEGIN and the settings */
  int before = c->nlater;
  /* What may go with the commit (the counters, lib/counts.c, and the
   * wake-ups) is held last: after the claim that ends the transaction. */
  while (c->commit_with && before > 0 && c->later[before - 1].late) before--;
  const size_t at = lead + (size_t)before;
  for (int i = 0; i < c->nlater; i++) {
    const later *l = &c->later[i];
    if (i == before) all[k++] = *q;
    all[k++] = (sendable){l->id, NULL, l->n, l->values, l->lengths, l->formats};
  }
  if (before == c->nlater) all[k++] = *q;
  if (c->commit_with) all[k++] = (sendable){.id = -1, .sql = "COMMIT"};
  pipeline(c, all, k, got);
  if (begin && !result_ok(got[0]) && (got[0] == NULL || PQstatus(c->conn) != CONNECTION_OK)) {
    for (size_t i = 0; i < k; i++) PQclear(got[i]);
    return pg_restart(db);
  }
  /* The first failure is what went wrong; what came after it did not
   * run.  q's own is for the caller. */
  for (size_t i = 0; i < k && rc == JOBQ_OK; i++)
    if (i != at && (i < at || result_ok(got[at])) && !result_ok(got[i]))
      rc = pg_fail(db, got[i], sent_what(&all[i]));
  for (int j = 0; j < before && rc == JOBQ_OK; j++)
    if (c->later[j].ids != NULL)
      rc = insert_ids(db, got[j + lead], c->later[j].ids, c->later[j].nids);
  /* A COMMIT that ended a failed transaction says ROLLBACK. */
  if (rc == JOBQ_OK && c->commit_with && result_ok(got[at])) {
    c->committed = strcmp(PQcmdStatus(got[k - 1]), "COMMIT") == 0;
    if (!c->committed)
      rc = jobq__fail(db, JOBQ_EDB, "committing: the server rolled the transaction back");
  }
  for (size_t j = 0; j < k; j++)
    if (j != at) PQclear(got[j]);
  if (rc == JOBQ_OK)
    *res = got[at];
  else
    PQclear(got[at]);
  pg_later_clear(c);
  return rc;
}

/* Runs SQL without parameters after what waits to be sent. */
int pg_run_after(jobq *db, const char *sql, const char *what) {
  const sendable q = {.id = -1, .sql = sql};
  PGresult *res;
  int rc = pg_exec_pending(db, &q, &res);
  if (rc == JOBQ_OK && !result_ok(res)) rc = pg_fail(db, res, what);
  PQclear(res);
  return rc;
}

/* BEGIN, at once, with the transaction's settings through a pooler in
 * transaction mode (one round trip). */
int pg_run_begin(jobq *db, const char *what) {
  pg *c = pg_conn(db);
  if (!c->pooled) return pg_run_plain(db, "BEGIN", what);
  int rc = pg_prepare(db, PG_SETTINGS);
  if (rc != JOBQ_OK) return rc;
  const sendable all[2] = {{.id = -1, .sql = "BEGIN"}, settings(db)};
  PGresult *got[2];
  pipeline(c, all, 2, got);
  for (size_t i = 0; i < 2; i++) {
    if (rc == JOBQ_OK && !result_ok(got[i])) rc = pg_fail(db, got[i], what);
    PQclear(got[i]);
  }
  return rc;
}

/* Runs statement id with a, or holds it for the next round trip, when how
 * allows and the transaction is the library's own (lazy): a statement
 * whose result is not read, or an INSERT whose ids may come with the
 * commit's round trip (insert_ids).  In a caller's transaction, every
 * statement runs at once. */


int pg_query(jobq *db, int id, const jobq_val *a, size_t n, jobq_rows **rows,
                    const jobq_how *how) {
  pg *c = pg_conn(db);
  /* The planner's statistics looked at before a claim (refresh_stats),
   * and before a put in a transaction of the library's own. */
  int rc = JOBQ_OK;
  if (how != NULL && how->claim > 0)
    rc = pg_refresh_stats(db, c->full_claim, 1);
  else if (how != NULL && how->adds && c->lazy)
    rc = pg_refresh_stats(db, 0, 0);
  if (rc != JOBQ_OK) return rc;
  if (n > MAX_PARAMS) return jobq__fail(db, JOBQ_EINVAL, "too many parameters");
  rc = pg_prepare(db, id);
  /* Nothing was done yet in a lazy transaction: it runs again on a
   * connection made again. */
  if (rc == JOBQ_ECONN && c->begin_pending && PQstatus(c->conn) != CONNECTION_OK)
    rc = pg_restart(db);
  if (rc != JOBQ_OK) return rc;
  /* A set statement may leave a value of its other dialects unused. */
  if (n > c->params[id]) n = c->params[id];
  const char *values[MAX_PARAMS];
  int lengths[MAX_PARAMS], formats[MAX_PARAMS];
  char ints[MAX_PARAMS][24];
  array cols[MAX_PARAMS];
  size_t ncols = 0;
  for (size_t i = 0; i < n; i++) {
    lengths[i] = (int)a[i].len;
    formats[i] = 1;
    switch (a[i].type) {
      case 'i':
        /* In text, so that the server reads it as whatever integer type
         * the statement wants. */
        lengths[i] = snprintf(ints[i], sizeof ints[i], "%lld", (long long)a[i].i);
        values[i] = ints[i];
        formats[i] = 0;
        break;
      case 'n': values[i] = NULL; break;
      case 'c':
        arr_column(&cols[ncols], &a[i]);
        values[i] = cols[ncols].p;
        lengths[i] = (int)cols[ncols].len;
        if (cols[ncols++].failed) rc = JOBQ_ENOMEM;
        break;
      default: values[i] = a[i].p; break; /* text, bytes, arrays */
    }
  }
  if (rc != JOBQ_OK) {
    for (size_t i = 0; i < ncols; i++) free(cols[i].p);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  if (rows == NULL && c->lazy && how != NULL && how->defer &&
      pg_later_add(c, id, (int)n, values, lengths, formats, how)) {
    for (size_t i = 0; i < ncols; i++) free(cols[i].p);
    return JOBQ_OK;
  }
  /* The claim, the last statement of the library's own transaction:
   * the counters, the wake-ups and the COMMIT go after it in its round
   * trip (exec_pending). */
  int fused = how != NULL && how->ends && c->lazy;
  if (fused) rc = pg_notify_later(db);
  c->commit_with = fused && rc == JOBQ_OK;
  PGresult *res = NULL;
  const sendable q = {id, NULL, (int)n, values, lengths, formats};
  if (rc == JOBQ_OK) rc = pg_exec_pending(db, &q, &res);
  c->commit_with = 0;
  /* Committed; or the connection broke with the COMMIT on its way
   * (after the BEGIN went through: then nothing was sent). */
  if (fused) db->txn_committed = c->committed ? 1 : rc == JOBQ_ECONN && !db->retry ? -1 : 0;
  for (size_t i = 0; i < ncols; i++) free(cols[i].p);
  if (rc != JOBQ_OK) return rc;
  if (!result_ok(res)) {
    rc = pg_fail(db, res, stmt_what(id));
    PQclear(res);
    return rc;
  }
  const char *t = PQcmdTuples(res);
  c->changes = t && *t ? strtoll(t, NULL, 10) : 0;
  if (how != NULL && how->claim > 0)
    c->full_claim = (size_t)PQntuples(res) == how->claim ? PQntuples(res) : 0;
  if (rows == NULL) {
    rc = how != NULL && how->ids != NULL ? insert_ids(db, res, how->ids, how->nids) : JOBQ_OK;
    PQclear(res);
    return rc;
  }
  jobq_rows *r = malloc(sizeof *r);
  if (r == NULL) {
    PQclear(res);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  *r = (jobq_rows){res, -1, PQntuples(res)};
  *rows = r;
  return JOBQ_OK;
}

int pg_next(jobq *db, jobq_rows *r) {
  (void)db;
  if (r->row + 1 >= r->nrows) return 0;
  r->row++;
  return 1;
}

void pg_done(jobq *db, jobq_rows *r) {
  (void)db;
  PQclear(r->res);
  free(r);
}

int pg_is_null(jobq_rows *r, int col) { return PQgetisnull(r->res, r->row, col); }

int64_t pg_col_int(jobq_rows *r, int col) {
  if (PQgetisnull(r->res, r->row, col)) return 0;
  const char *p = PQgetvalue(r->res, r->row, col);
  uint64_t v8;
  uint32_t v4;
  uint16_t v2;
  switch (PQftype(r->res, col)) {
    case OID_INT8: memcpy(&v8, p, 8); return (int64_t)be64toh(v8);
    case OID_INT4: memcpy(&v4, p, 4); return (int32_t)be32toh(v4);
    case OID_INT2: memcpy(&v2, p, 2); return (int16_t)be16toh(v2);
    case OID_BOOL: return p[0] != 0;
    default: return strtoll(p, NULL, 10);
  }
}

const void *pg_col_bytes(jobq_rows *r, int col, size_t *len) {
  *len = (size_t)PQgetlength(r->res, r->row, col);
  return PQgetvalue(r->res, r->row, col); /* libpq adds a NUL */
}

int64_t pg_changes(jobq *db) { return pg_conn(db)->changes; }

/* Every INSERT of the library's returns its ids as rows (RETURNING). */
int64_t pg_insert_id(jobq *db) {
  (void)db;
  return 0;
}
