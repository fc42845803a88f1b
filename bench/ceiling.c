/*
 * ceiling.c - the `ceiling` workload of `jobq bench`: how fast the
 * bare SQL of a claim goes on this server with no jobq logic at all, so
 * that the drain figures can be read as a share of it.  A table of its
 * own (jobq_bench_ceiling_PID: an id and a payload) is filled with N rows,
 * then --concurrency processes, each on its own connection (jobq_open,
 * then jobq_native: the PGconn, MYSQL or sqlite3 the store uses), loop:
 * begin, select a batch of ids ORDER BY id LIMIT n FOR UPDATE SKIP LOCKED,
 * delete them, commit, until the table is empty.  SQLite has one writer
 * and no row locks: there a loop takes the file (BEGIN IMMEDIATE) and
 * deletes the first batch, waiting for the file in SQLite's own busy
 * handler.  The table is dropped at the end.  Every value is bound; only
 * the pid's digits are in the text.
 *
 * The fenced variant is the same protocol split the way a queue that
 * fences its acknowledgements must split it, with no jobq logic either:
 * one transaction marks a batch of ready rows running under a claim token
 * (the rows are written, and leave the ready index), a second one deletes
 * them where they still carry that token.  Two commits per batch where
 * the bare one has one.  The archived variant is the fenced one whose
 * delete also moves each row to an archive table (its id, payload, a
 * result, its token and when it finished, indexed by that time for
 * retention), as a queue that keeps the outcome of every job must; jobq
 * adds to it a wider row, the claim's order by priority and run time,
 * its counters and its session.
 *
 * On PostgreSQL and SQLite the workload ends with the latency floor: a
 * put and a claim of bare SQL, each one durable commit, the claimer woken
 * by NOTIFY or by the put's write to the log, timed as the latency
 * workload times jobq (see struct floor).
 */
#include <errno.h>
#include <poll.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "output.h"
#include "sql.h"
#include "util.h"

#define DEFAULT_CONCURRENCY 4
#define FILL_ROWS 100  /* rows per insert on MariaDB */

struct ceiling {
  const struct bench_config *cfg;
  char table[64];
  size_t batch;
  int fenced;    /* claim in one transaction, delete in a second */
  int archived;  /* fenced, and the delete archives each row */
  char archive[64];
  struct bench_shared *shared;
};

/* A claim token for this process's next batch: unique among the
 * claimers of one run. */
static long long next_token(void) {
  static long long seq;
  return ((long long)getpid() << 32) + ++seq;
}

/* A connection of the store's own (jobq_open) for bare SQL: its native
 * handle (PGconn, MYSQL or sqlite3), or NULL after a message, *db then
 * closed. */
static void *open_native(const struct bench_config *cfg, jobq **db) {
  int rc = jobq_open(cfg->url, db);
  void *native = rc == JOBQ_OK ? jobq_native(*db) : NULL;
  if (native == NULL) {
    cli_lib_error(*db, rc != JOBQ_OK ? rc : JOBQ_ECONN);
    jobq_close(*db);
    *db = NULL;
  }
  return native;
}

/* ---------------------------------------------------------------- filling */

/* Puts k rows of payload "x" into the ceiling's table: 1, or 0 with the
 * error in err. */
typedef int (*fill_fn)(void *ctx, int64_t k, char *err, size_t size);

/* Fills the ceiling's table with n rows, at most chunk to a statement,
 * under a progress bar: 1, or 0 with the error in err. */
static int fill(int64_t n, int64_t chunk, fill_fn insert, void *ctx, char *err,
                size_t size) {
  struct cli_progress bar;
  cli_progress_start(&bar, "ceiling (filling):", "rows", n);
  int ok = 1;
  for (int64_t done = 0; done < n && ok && !bench_stop;) {
    int64_t k = n - done < chunk ? n - done : chunk;
    ok = insert(ctx, k, err, size);
    done += k;
    cli_progress_update(&bar, done, done);
  }
  cli_progress_end(&bar);
  return ok;
}

/* ---------------------------------------------------------------- PostgreSQL */

static int pg_ok(PGresult *res, char *err, size_t size) {
  ExecStatusType st = PQresultStatus(res);
  int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
  if (!ok && err != NULL) snprintf(err, size, "%s", PQresultErrorMessage(res));
  PQclear(res);
  return ok;
}

static int pg_exec(PGconn *pc, const char *sql, char *err, size_t size) {
  return pg_ok(PQexec(pc, sql), err, size);
}

struct pg_fill {
  PGconn *pc;
  const char *sql;  /* the INSERT of $2 rows of payload $1 */
};

static int pg_fill(void *ctx, int64_t k, char *err, size_t size) {
  const struct pg_fill *f = ctx;
  char count[24];
  snprintf(count, sizeof count, "%lld", (long long)k);
  const char *values[] = {"x", count};
  return pg_ok(PQexecParams(f->pc, f->sql, 2, NULL, values, NULL, NULL, 0), err, size);
}

static int pg_create(PGconn *pc, const struct ceiling *c, int64_t n, char *err,
                     size_t size) {
  char sql[512];
  if (c->fenced)
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (id bigserial PRIMARY KEY, state smallint NOT NULL DEFAULT 0, "
             "claim bigint, payload bytea NOT NULL); CREATE INDEX ON %s(id) WHERE state = 0",
             c->table, c->table);
  else
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (id bigserial PRIMARY KEY, payload bytea NOT NULL)", c->table);
  if (!pg_exec(pc, sql, err, size)) return -1;
  if (c->archived) {
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (id bigint PRIMARY KEY, payload bytea NOT NULL, result bytea, "
             "claim bigint NOT NULL, finished_at bigint NOT NULL); "
             "CREATE INDEX ON %s(finished_at)",
             c->archive, c->archive);
    if (!pg_exec(pc, sql, err, size)) return -1;
  }
  snprintf(sql, sizeof sql,
           "INSERT INTO %s(payload) SELECT $1::bytea FROM generate_series(1, $2::int)",
           c->table);
  struct pg_fill f = {pc, sql};
  return fill(n, 10000, pg_fill, &f, err, size) ? 0 : -1;
}

/* The ids of res's first column as an array literal in ids ("{1,2}"):
 * their number. */
static int pg_ids(PGresult *res, char *ids, size_t cap) {
  int n = PQntuples(res);
  size_t o = 0;
  ids[o++] = '{';
  for (int i = 0; i < n; i++)
    o += (size_t)snprintf(ids + o, cap - o, "%s%s", i ? "," : "", PQgetvalue(res, i, 0));
  snprintf(ids + o, cap - o, "}");
  return n;
}

/* Bare: the select and its delete in one transaction.  Fenced: the claim
 * and its delete, each a transaction of its own.  Archived: the delete
 * moves the rows to the archive. */
static int pg_claimer(PGconn *pc, const struct ceiling *c) {
  char take[512], del[512], limit[24], token[24] = "";
  if (c->fenced) {
    snprintf(take, sizeof take,
             "UPDATE %s SET state = 1, claim = $2::bigint WHERE id = ANY(ARRAY(SELECT id "
             "FROM %s WHERE state = 0 ORDER BY id LIMIT $1::int FOR UPDATE SKIP LOCKED)) "
             "RETURNING id",
             c->table, c->table);
    if (c->archived)
      snprintf(del, sizeof del,
               "WITH d AS (DELETE FROM %s WHERE id = ANY($1::bigint[]) AND claim = $2::bigint "
               "RETURNING id, payload, claim) INSERT INTO %s SELECT id, payload, ''::bytea, "
               "claim, (extract(epoch FROM statement_timestamp()) * 1000)::bigint FROM d",
               c->table, c->archive);
    else
      snprintf(del, sizeof del,
               "DELETE FROM %s WHERE id = ANY($1::bigint[]) AND claim = $2::bigint", c->table);
  } else {
    snprintf(take, sizeof take,
             "SELECT id FROM %s ORDER BY id LIMIT $1::int FOR UPDATE SKIP LOCKED", c->table);
    snprintf(del, sizeof del, "DELETE FROM %s WHERE id = ANY($1::bigint[])", c->table);
  }
  int params = c->fenced ? 2 : 1;
  snprintf(limit, sizeof limit, "%zu", c->batch);
  char err[512] = "";
  size_t cap = c->batch * 24 + 3;
  char *ids = cli_xmalloc(cap);
  while (!bench_stop) {
    if (!c->fenced && !pg_exec(pc, "BEGIN", err, sizeof err)) goto fail;
    if (c->fenced) snprintf(token, sizeof token, "%lld", next_token());
    const char *v1[] = {limit, token};
    PGresult *res = PQexecParams(pc, take, params, NULL, v1, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
      pg_ok(res, err, sizeof err);
      goto fail;
    }
    int n = pg_ids(res, ids, cap);
    PQclear(res);
    if (n > 0) {
      const char *v2[] = {ids, token};
      res = PQexecParams(pc, del, params, NULL, v2, NULL, NULL, 0);
      if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        pg_ok(res, err, sizeof err);
        goto fail;
      }
      long deleted = strtol(PQcmdTuples(res), NULL, 10);
      PQclear(res);
      if (deleted != n) {
        snprintf(err, sizeof err, "the delete removed %ld of %d rows", deleted, n);
        goto fail;
      }
    }
    if (!c->fenced && !pg_exec(pc, "COMMIT", err, sizeof err)) goto fail;
    if (n == 0) break;
    atomic_fetch_add(&c->shared->claimed, n);
  }
  free(ids);
  return 0;
fail:
  cli_error("ceiling: %s", err);
  free(ids);
  return 1;
}

/* ---------------------------------------------------------------- MariaDB */

static int my_exec(MYSQL *my, const char *sql, char *err, size_t size) {
  if (mysql_query(my, sql) == 0) {
    MYSQL_RES *r = mysql_store_result(my);
    if (r != NULL) mysql_free_result(r);
    return 1;
  }
  snprintf(err, size, "%s", mysql_error(my));
  return 0;
}

static int stmt_fail(MYSQL_STMT *st, char *err, size_t size) {
  snprintf(err, size, "%s", mysql_stmt_error(st));
  return 0;
}

/* "INSERT ... VALUES (?),(?),..." or "DELETE ... IN (?,?,...)": k
 * placeholders, no values. */
static char *placeholders(const char *head, const char *one, const char *sep,
                          const char *tail, size_t k) {
  size_t size = strlen(head) + k * (strlen(one) + strlen(sep)) + strlen(tail) + 1;
  char *sql = cli_xmalloc(size);
  size_t o = (size_t)snprintf(sql, size, "%s", head);
  for (size_t i = 0; i < k; i++)
    o += (size_t)snprintf(sql + o, size - o, "%s%s", i ? sep : "", one);
  snprintf(sql + o, size - o, "%s", tail);
  return sql;
}

/* text prepared and bound to b: the statement, or NULL with err set. */
static MYSQL_STMT *my_prepare(MYSQL *my, const char *text, MYSQL_BIND *b, char *err,
                              size_t size) {
  MYSQL_STMT *st = mysql_stmt_init(my);
  if (st == NULL) {
    snprintf(err, size, "out of memory");
  } else if (mysql_stmt_prepare(st, text, strlen(text)) != 0 ||
             mysql_stmt_bind_param(st, b) != 0) {
    stmt_fail(st, err, size);
    mysql_stmt_close(st);
    st = NULL;
  }
  return st;
}

/* The INSERT of k rows of payload "x", prepared and bound. */
static MYSQL_STMT *my_insert(MYSQL *my, const struct ceiling *c, size_t k,
                             MYSQL_BIND *b, char *err, size_t size) {
  char head[128];
  snprintf(head, sizeof head, "INSERT INTO %s(payload) VALUES ", c->table);
  char *text = placeholders(head, "(?)", ",", "", k);
  static char payload[] = "x";
  static unsigned long len = 1;
  memset(b, 0, k * sizeof *b);
  for (size_t i = 0; i < k; i++) {
    b[i].buffer_type = MYSQL_TYPE_BLOB;
    b[i].buffer = payload;
    b[i].buffer_length = 1;
    b[i].length = &len;
  }
  MYSQL_STMT *st = my_prepare(my, text, b, err, size);
  free(text);
  return st;
}

struct my_fill {
  MYSQL *my;
  const struct ceiling *c;
  MYSQL_STMT *full;  /* the INSERT of FILL_ROWS rows */
};

/* k rows: FILL_ROWS with the statement prepared for them, fewer (the
 * last) with one of their own. */
static int my_fill(void *ctx, int64_t k, char *err, size_t size) {
  const struct my_fill *f = ctx;
  MYSQL_BIND b[FILL_ROWS];
  MYSQL_STMT *st = k == FILL_ROWS ? f->full : my_insert(f->my, f->c, (size_t)k, b, err, size);
  int ok = st != NULL && (mysql_stmt_execute(st) == 0 || stmt_fail(st, err, size));
  if (st != NULL && st != f->full) mysql_stmt_close(st);
  return ok;
}

static int my_create(MYSQL *my, const struct ceiling *c, int64_t n, char *err,
                     size_t size) {
  char sql[256];
  snprintf(sql, sizeof sql,
           "CREATE TABLE %s (id BIGINT AUTO_INCREMENT PRIMARY KEY, %spayload BLOB NOT "
           "NULL) ENGINE=InnoDB",
           c->table,
           c->fenced ? "state TINYINT NOT NULL DEFAULT 0, claim BIGINT, "
                       "INDEX ready (state, id), " : "");
  if (!my_exec(my, sql, err, size)) return -1;
  if (c->archived) {
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (id BIGINT PRIMARY KEY, payload BLOB NOT NULL, result BLOB, "
             "claim BIGINT NOT NULL, finished_at BIGINT NOT NULL, INDEX (finished_at)) "
             "ENGINE=InnoDB",
             c->archive);
    if (!my_exec(my, sql, err, size)) return -1;
  }
  MYSQL_BIND b[FILL_ROWS];
  struct my_fill f = {my, c, my_insert(my, c, FILL_ROWS, b, err, size)};
  int ok = f.full != NULL && fill(n, FILL_ROWS, my_fill, &f, err, size);
  if (f.full != NULL) mysql_stmt_close(f.full);
  return ok ? 0 : -1;
}

/* head followed by k placeholders for ids[] and ")", prepared and bound:
 * the token (when not NULL) to a placeholder in head, then ids[]. */
static MYSQL_STMT *my_by_ids(MYSQL *my, const char *head, size_t k, long long *ids,
                             long long *token, char *err, size_t size) {
  char *text = placeholders(head, "?", ",", ")", k);
  size_t nb = k + (token != NULL);
  MYSQL_BIND *b = cli_xmalloc(nb * sizeof *b);
  memset(b, 0, nb * sizeof *b);
  for (size_t i = 0; i < nb; i++) {
    b[i].buffer_type = MYSQL_TYPE_LONGLONG;
    b[i].buffer = token != NULL && i == 0 ? token : &ids[i - (token != NULL)];
  }
  MYSQL_STMT *st = my_prepare(my, text, b, err, size);
  free(b);
  free(text);
  return st;
}

/* Runs head's statement for the first n of ids[] (full: the one prepared
 * for a whole batch, used when n is that).  *affected: the rows it changed;
 * *code: the server's error number on failure.  1 or 0. */
static int my_run_ids(MYSQL *my, MYSQL_STMT *full, size_t batch, const char *head,
                      size_t n, long long *ids, long long *token,
                      unsigned long long *affected, unsigned *code, char *err, size_t size) {
  MYSQL_STMT *st = n == batch ? full : my_by_ids(my, head, n, ids, token, err, size);
  int ok = st != NULL && mysql_stmt_execute(st) == 0;
  if (st == NULL) {
    *code = mysql_errno(my);
  } else if (!ok) {
    *code = mysql_stmt_errno(st);
    stmt_fail(st, err, size);
  } else {
    *affected = mysql_stmt_affected_rows(st);
  }
  if (st != NULL && st != full) mysql_stmt_close(st);
  return ok;
}

static int my_claimer(MYSQL *my, const struct ceiling *c) {
  char err[512] = "out of memory", sql[256], del_head[128], claim_head[128], arch_head[256];
  snprintf(sql, sizeof sql, "SELECT id FROM %s%s ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED",
           c->table, c->fenced ? " WHERE state = 0" : "");
  snprintf(del_head, sizeof del_head, "DELETE FROM %s WHERE %sid IN (", c->table,
           c->fenced ? "claim = ? AND " : "");
  snprintf(claim_head, sizeof claim_head, "UPDATE %s SET state = 1, claim = ? WHERE id IN (",
           c->table);
  snprintf(arch_head, sizeof arch_head,
           "INSERT INTO %s SELECT id, payload, '', claim, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 "
           "AS SIGNED) FROM %s WHERE claim = ? AND id IN (",
           c->archive, c->table);
  long long *ids = cli_xmalloc(c->batch * sizeof *ids);
  long long limit = (long long)c->batch, id = 0, token = 0;
  long long *tok = c->fenced ? &token : NULL;
  MYSQL_STMT *sel = mysql_stmt_init(my);
  MYSQL_STMT *del_full = my_by_ids(my, del_head, c->batch, ids, tok, err, sizeof err);
  MYSQL_STMT *claim_full =
      c->fenced ? my_by_ids(my, claim_head, c->batch, ids, tok, err, sizeof err) : NULL;
  MYSQL_STMT *arch_full =
      c->archived ? my_by_ids(my, arch_head, c->batch, ids, tok, err, sizeof err) : NULL;
  MYSQL_BIND pb, rb;
  memset(&pb, 0, sizeof pb);
  memset(&rb, 0, sizeof rb);
  pb.buffer_type = MYSQL_TYPE_LONGLONG;
  pb.buffer = &limit;
  rb.buffer_type = MYSQL_TYPE_LONGLONG;
  rb.buffer = &id;
  int ok = sel != NULL && del_full != NULL && (claim_full != NULL || !c->fenced) &&
           (arch_full != NULL || !c->archived);
  if (ok && (mysql_stmt_prepare(sel, sql, strlen(sql)) != 0 ||
             mysql_stmt_bind_param(sel, &pb) != 0 || mysql_stmt_bind_result(sel, &rb) != 0))
    ok = stmt_fail(sel, err, sizeof err);
  while (ok && !bench_stop) {
    if (!(ok = my_exec(my, "START TRANSACTION", err, sizeof err))) break;
    unsigned code = 0;
    unsigned long long changed = 0;
    size_t n = 0;
    token = next_token();
    if (mysql_stmt_execute(sel) != 0 || mysql_stmt_store_result(sel) != 0) {
      code = mysql_stmt_errno(sel);
      ok = stmt_fail(sel, err, sizeof err);
    } else {
      while (n < c->batch && mysql_stmt_fetch(sel) == 0) ids[n++] = id;
      mysql_stmt_free_result(sel);
    }
    /* Bare: delete them now.  Fenced: mark them claimed now, and delete
     * them in a transaction of their own after the commit. */
    if (ok && n > 0)
      ok = my_run_ids(my, c->fenced ? claim_full : del_full, c->batch,
                      c->fenced ? claim_head : del_head, n, ids, tok, &changed, &code, err,
                      sizeof err);
    if (ok && !(ok = my_exec(my, "COMMIT", err, sizeof err))) code = mysql_errno(my);
    /* InnoDB picks deadlock victims among lockers of neighbouring rows:
     * as any client of this protocol would, roll back and go again. */
    if (!ok && (code == 1213 || code == 1205)) {
      ok = my_exec(my, "ROLLBACK", err, sizeof err);
      continue;
    }
    if (!ok || n == 0) break;
    /* Fenced: the delete, again when it was a deadlock's victim.
     * Archived: the rows copied to the archive first, in the same
     * transaction. */
    if (c->fenced) {
      unsigned long long copied = n;
      do {
        if (c->archived) {
          ok = my_exec(my, "START TRANSACTION", err, sizeof err) &&
               my_run_ids(my, arch_full, c->batch, arch_head, n, ids, tok, &copied, &code,
                          err, sizeof err);
        }
        if (ok)
          ok = my_run_ids(my, del_full, c->batch, del_head, n, ids, tok, &changed, &code, err,
                          sizeof err);
        if (ok && c->archived && !(ok = my_exec(my, "COMMIT", err, sizeof err)))
          code = mysql_errno(my);
        if (!ok && c->archived && (code == 1213 || code == 1205))
          my_exec(my, "ROLLBACK", err, sizeof err);
      } while (!ok && (code == 1213 || code == 1205));
      if (ok && (changed != n || copied != n)) {
        snprintf(err, sizeof err, "the fenced delete removed %llu and archived %llu of %zu rows",
                 changed, copied, n);
        ok = 0;
      }
    }
    if (ok) atomic_fetch_add(&c->shared->claimed, (long long)n);
  }
  if (!ok) cli_error("ceiling: %s", err);
  if (sel != NULL) mysql_stmt_close(sel);
  if (del_full != NULL) mysql_stmt_close(del_full);
  if (claim_full != NULL) mysql_stmt_close(claim_full);
  if (arch_full != NULL) mysql_stmt_close(arch_full);
  free(ids);
  return ok ? 0 : 1;
}

/* ---------------------------------------------------------------- SQLite */

/* SQLite has one writer at a time and no row locks to skip: each
 * transaction takes the file (BEGIN IMMEDIATE), and a connection that
 * finds it taken waits in SQLite's own busy handler (sqlite3_busy_timeout),
 * not in jobq's; for up to a minute, as a connection starved that long
 * fails the run. */
#define SQ_BUSY_MS 60000

static int sq_fail(sqlite3 *db, char *err, size_t size) {
  snprintf(err, size, "%s", sqlite3_errmsg(db));
  return 0;
}

static int sq_exec(sqlite3 *db, const char *sql, char *err, size_t size) {
  return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK || sq_fail(db, err, size);
}

static sqlite3_stmt *sq_prepare(sqlite3 *db, const char *sql, char *err, size_t size) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    sq_fail(db, err, size);
    sqlite3_finalize(st);
    return NULL;
  }
  return st;
}

/* k rows by ctx, the INSERT of ?1 rows. */
static int sq_fill(void *ctx, int64_t k, char *err, size_t size) {
  sqlite3_stmt *ins = ctx;
  sqlite3_bind_int64(ins, 1, k);
  int ok = sqlite3_step(ins) == SQLITE_DONE || sq_fail(sqlite3_db_handle(ins), err, size);
  sqlite3_reset(ins);
  return ok;
}

static int sq_create(sqlite3 *db, const struct ceiling *c, int64_t n, char *err,
                     size_t size) {
  char sql[512];
  if (c->fenced)
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (id INTEGER PRIMARY KEY, state INTEGER NOT NULL DEFAULT 0, "
             "claim INTEGER, payload BLOB NOT NULL); "
             "CREATE INDEX %s_ready ON %s(id) WHERE state = 0",
             c->table, c->table, c->table);
  else
    snprintf(sql, sizeof sql, "CREATE TABLE %s (id INTEGER PRIMARY KEY, payload BLOB NOT NULL)",
             c->table);
  if (!sq_exec(db, sql, err, size)) return -1;
  if (c->archived) {
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (id INTEGER PRIMARY KEY, payload BLOB NOT NULL, result BLOB, "
             "claim INTEGER NOT NULL, finished_at INTEGER NOT NULL); "
             "CREATE INDEX %s_finished ON %s(finished_at)",
             c->archive, c->archive, c->archive);
    if (!sq_exec(db, sql, err, size)) return -1;
  }
  snprintf(sql, sizeof sql,
           "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1) "
           "INSERT INTO %s(payload) SELECT x'78' FROM n",
           c->table);
  sqlite3_stmt *ins = sq_prepare(db, sql, err, size);
  int ok = ins != NULL && fill(n, 10000, sq_fill, ins, err, size);
  sqlite3_finalize(ins);
  return ok ? 0 : -1;
}

/* Bare: one transaction deletes the first batch of rows.  Fenced: one
 * marks them claimed under a token, a second deletes them where they
 * still carry it (their ids as a JSON array).  Archived: the second
 * copies them to the archive first. */
static int sq_claimer(sqlite3 *db, const struct ceiling *c) {
  char take[512], del[256], arch[512], err[512] = "";
  if (c->fenced)
    snprintf(take, sizeof take,
             "UPDATE %s SET state = 1, claim = ?2 WHERE id IN (SELECT id FROM %s "
             "WHERE state = 0 ORDER BY id LIMIT ?1) RETURNING id",
             c->table, c->table);
  else
    snprintf(take, sizeof take,
             "DELETE FROM %s WHERE id IN (SELECT id FROM %s ORDER BY id LIMIT ?1) RETURNING id",
             c->table, c->table);
  snprintf(del, sizeof del,
           "DELETE FROM %s WHERE claim = ?1 AND id IN (SELECT value FROM json_each(?2))",
           c->table);
  snprintf(arch, sizeof arch,
           "INSERT INTO %s SELECT id, payload, x'', claim, "
           "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) FROM %s "
           "WHERE claim = ?1 AND id IN (SELECT value FROM json_each(?2))",
           c->archive, c->table);
  sqlite3_busy_timeout(db, SQ_BUSY_MS);
  sqlite3_stmt *st_take = sq_prepare(db, take, err, sizeof err);
  sqlite3_stmt *st_del = c->fenced ? sq_prepare(db, del, err, sizeof err) : NULL;
  sqlite3_stmt *st_arch = c->archived ? sq_prepare(db, arch, err, sizeof err) : NULL;
  size_t cap = c->batch * 24 + 3;
  char *ids = cli_xmalloc(cap);
  int ok = st_take != NULL && (st_del != NULL || !c->fenced) &&
           (st_arch != NULL || !c->archived);
  while (ok && !bench_stop) {
    long long token = next_token();
    int n = 0, rc;
    size_t o = 0;
    if (!(ok = sq_exec(db, "BEGIN IMMEDIATE", err, sizeof err))) break;
    sqlite3_bind_int64(st_take, 1, (sqlite3_int64)c->batch);
    if (c->fenced) sqlite3_bind_int64(st_take, 2, token);
    ids[o++] = '[';
    while ((rc = sqlite3_step(st_take)) == SQLITE_ROW)
      o += (size_t)snprintf(ids + o, cap - o, "%s%lld", n++ ? "," : "",
                            (long long)sqlite3_column_int64(st_take, 0));
    snprintf(ids + o, cap - o, "]");
    sqlite3_reset(st_take);
    ok = (rc == SQLITE_DONE || sq_fail(db, err, sizeof err)) &&
         sq_exec(db, "COMMIT", err, sizeof err);
    if (!ok || n == 0) break;
    if (c->fenced) {
      int copied = n, deleted = 0;
      ok = sq_exec(db, "BEGIN IMMEDIATE", err, sizeof err);
      if (ok && c->archived) {
        sqlite3_bind_int64(st_arch, 1, token);
        sqlite3_bind_text(st_arch, 2, ids, -1, SQLITE_STATIC);
        ok = sqlite3_step(st_arch) == SQLITE_DONE || sq_fail(db, err, sizeof err);
        copied = sqlite3_changes(db);
        sqlite3_reset(st_arch);
      }
      if (ok) {
        sqlite3_bind_int64(st_del, 1, token);
        sqlite3_bind_text(st_del, 2, ids, -1, SQLITE_STATIC);
        ok = sqlite3_step(st_del) == SQLITE_DONE || sq_fail(db, err, sizeof err);
        deleted = sqlite3_changes(db);
        sqlite3_reset(st_del);
      }
      if (ok) ok = sq_exec(db, "COMMIT", err, sizeof err);
      if (ok && (deleted != n || copied != n)) {
        snprintf(err, sizeof err, "the fenced delete removed %d and archived %d of %d rows",
                 deleted, copied, n);
        ok = 0;
      }
    }
    if (ok) atomic_fetch_add(&c->shared->claimed, n);
  }
  if (!ok) cli_error("ceiling: %s", err);
  sqlite3_finalize(st_take);
  sqlite3_finalize(st_del);
  sqlite3_finalize(st_arch);
  free(ids);
  return ok ? 0 : 1;
}

/* ---------------------------------------------------------------- the latency floor */

/* Runs sql on the store's native connection: 1, or 0 with the error in
 * err. */
static int bare_exec(const struct bench_config *cfg, void *native, const char *sql, char *err,
                     size_t size) {
  return cfg->store == BENCH_POSTGRES ? pg_exec(native, sql, err, size)
         : cfg->store == BENCH_MYSQL  ? my_exec(native, sql, err, size)
                                      : sq_exec(native, sql, err, size);
}

/* A put and a claim with nothing of jobq between them: the parent puts a
 * stamped row, one durable commit as jobq's put is, at the latency
 * workload's pace; a listener process, woken by the put, claims the oldest
 * ready row under a token, one durable commit as the least a fenced claim
 * can be, and notes when the claim came back.  Both connections are the
 * store's own (jobq_open), with its settings: synchronous_commit on, or
 * WAL and synchronous=FULL.  On PostgreSQL the put notifies the listener
 * in the same statement and the claim is one statement.  SQLite has no
 * notifications: the listener watches the write-ahead log (inotify, as
 * jobq_watch() does), which wakes it at the put's write, while that
 * commit still flushes; its claim (BEGIN IMMEDIATE, UPDATE ... RETURNING,
 * COMMIT) finds the file locked until then and tries again every
 * SQ_FLOOR_WAIT_NS, the shortest wait that is not a spin. */
struct floor {
  const struct bench_config *cfg;
  char table[64], channel[64];
  int64_t n;                     /* rows put, the first one a warm-up */
  struct bench_shared *shared;
};

#define SQ_FLOOR_WAIT_NS 50000L

static int floor_fail(PGresult *res, const char *what) {
  char err[512];
  pg_ok(res, err, sizeof err);
  cli_error("ceiling (latency floor): %s: %s", what, err);
  return 1;
}

/* Claims every ready row, one statement each, noting when each claim came
 * back (after the claim, outside what it measures). */
static int pg_floor_claim_all(PGconn *pc, const struct floor *f, const char *take,
                              const char *note) {
  for (;;) {
    char token[24];
    snprintf(token, sizeof token, "%lld", next_token());
    const char *v1[] = {token};
    PGresult *res = PQexecParams(pc, take, 1, NULL, v1, NULL, NULL, 0);
    int64_t at = bench_wall_ns();
    if (PQresultStatus(res) != PGRES_TUPLES_OK) return floor_fail(res, "claiming");
    if (PQntuples(res) == 0) {
      PQclear(res);
      return 0;
    }
    char id[24], started[24];
    snprintf(id, sizeof id, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    snprintf(started, sizeof started, "%lld", (long long)at);
    const char *v2[] = {id, started};
    res = PQexecParams(pc, note, 2, NULL, v2, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) return floor_fail(res, "noting a claim");
    PQclear(res);
    atomic_fetch_add(&f->shared->claimed, 1);
  }
}

/* The listener on PostgreSQL: ready once it listens (a listener that could
 * not start ends without being ready), then claims until every row is
 * claimed. */
static int pg_floor_listener(const void *arg, int index) {
  const struct floor *f = arg;
  (void)index;
  jobq *db;
  PGconn *pc = open_native(f->cfg, &db);
  if (pc == NULL) return 1;
  char take[512], note[256], listen[96], err[512];
  snprintf(listen, sizeof listen, "LISTEN %s", f->channel);
  if (!pg_exec(pc, listen, err, sizeof err)) {
    cli_error("ceiling (latency floor): %s", err);
    jobq_close(db);
    return 1;
  }
  snprintf(take, sizeof take,
           "UPDATE %s SET state = 1, claim = $1::bigint WHERE id = ANY(ARRAY(SELECT id "
           "FROM %s WHERE state = 0 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)) "
           "RETURNING id",
           f->table, f->table);
  snprintf(note, sizeof note, "UPDATE %s SET started_ns = $2::bigint WHERE id = $1::bigint",
           f->table);
  atomic_fetch_add(&f->shared->ready, 1);
  int status = bench_await_go(f->shared, 60) == 1 ? 0 : 1;
  while (status == 0 && !bench_stop && atomic_load(&f->shared->claimed) < f->n) {
    int woken = 0;
    for (PGnotify *nt; (nt = PQnotifies(pc)) != NULL; woken = 1) PQfreemem(nt);
    if (woken) {
      status = pg_floor_claim_all(pc, f, take, note);
      continue;
    }
    struct pollfd p = {PQsocket(pc), POLLIN, 0};
    if (poll(&p, 1, 100) < 0 && errno != EINTR) status = 1;
    if (status == 0 && !PQconsumeInput(pc)) {
      cli_error("ceiling (latency floor): %s", PQerrorMessage(pc));
      status = 1;
    }
  }
  jobq_close(db);
  return status;
}

/* The SQLite listener's busy handler, in place of jobq's: see struct
 * floor.  It gives up after SQ_BUSY_MS, as the ceiling's claimers do. */
static int sq_floor_busy(void *arg, int count) {
  (void)arg;
  if ((long long)count * SQ_FLOOR_WAIT_NS >= SQ_BUSY_MS * 1000000LL) return 0;
  struct timespec ts = {0, SQ_FLOOR_WAIT_NS};
  nanosleep(&ts, NULL);
  return 1;
}

/* Claims every ready row, one transaction each, noting when each claim's
 * commit came back (after the commit, outside what it measures). */
static int sq_floor_claim_all(sqlite3 *h, const struct floor *f, sqlite3_stmt *take,
                              sqlite3_stmt *note) {
  char err[512];
  for (;;) {
    if (!sq_exec(h, "BEGIN IMMEDIATE", err, sizeof err)) break;
    sqlite3_bind_int64(take, 1, next_token());
    int rc = sqlite3_step(take);
    sqlite3_int64 id = rc == SQLITE_ROW ? sqlite3_column_int64(take, 0) : 0;
    if (rc == SQLITE_ROW) rc = sqlite3_step(take);
    sqlite3_reset(take);
    if (rc != SQLITE_DONE) {
      sq_fail(h, err, sizeof err);
      sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
      break;
    }
    if (!sq_exec(h, "COMMIT", err, sizeof err)) break;
    int64_t at = bench_wall_ns();
    if (id == 0) return 0;
    sqlite3_bind_int64(note, 1, id);
    sqlite3_bind_int64(note, 2, at);
    rc = sqlite3_step(note);
    sqlite3_reset(note);
    if (rc != SQLITE_DONE) {
      sq_fail(h, err, sizeof err);
      break;
    }
    atomic_fetch_add(&f->shared->claimed, 1);
  }
  cli_error("ceiling (latency floor): %s", err);
  return 1;
}

/* The listener on SQLite: ready once it watches the log, then claims on
 * every write to it until every row is claimed. */
static int sq_floor_listener(const void *arg, int index) {
  const struct floor *f = arg;
  (void)index;
  jobq *db;
  sqlite3 *h = open_native(f->cfg, &db);
  if (h == NULL) return 1;
  sqlite3_busy_handler(h, sq_floor_busy, NULL);
  char take[256], note[128], wal[4096], err[sizeof wal + 128] = "";
  snprintf(take, sizeof take,
           "UPDATE %s SET state = 1, claim = ?1 WHERE id = (SELECT id FROM %s "
           "WHERE state = 0 ORDER BY id LIMIT 1) RETURNING id",
           f->table, f->table);
  snprintf(note, sizeof note, "UPDATE %s SET started_ns = ?2 WHERE id = ?1", f->table);
  snprintf(wal, sizeof wal, "%s-wal", sqlite3_db_filename(h, "main"));
  sqlite3_stmt *st_take = sq_prepare(h, take, err, sizeof err);
  sqlite3_stmt *st_note = st_take != NULL ? sq_prepare(h, note, err, sizeof err) : NULL;
  int in = st_note != NULL ? inotify_init1(IN_NONBLOCK | IN_CLOEXEC) : -1;
  if (in >= 0 && inotify_add_watch(in, wal, IN_MODIFY) < 0) {
    snprintf(err, sizeof err, "cannot watch '%s': %s", wal, strerror(errno));
    close(in);
    in = -1;
  } else if (in < 0 && st_note != NULL) {
    snprintf(err, sizeof err, "inotify: %s", strerror(errno));
  }
  int status = 1;
  if (in < 0) {
    cli_error("ceiling (latency floor): %s", err);
  } else {
    atomic_fetch_add(&f->shared->ready, 1);
    status = bench_await_go(f->shared, 60) == 1 ? 0 : 1;
  }
  while (status == 0 && !bench_stop && atomic_load(&f->shared->claimed) < f->n) {
    struct pollfd p = {in, POLLIN, 0};
    int woken = poll(&p, 1, 100);
    if (woken < 0 && errno != EINTR) {
      cli_error("ceiling (latency floor): waiting for the log: %s", strerror(errno));
      status = 1;
    } else if (woken > 0) {
      /* Read before the claim: a write during it wakes the next poll. */
      char events[4096];
      while (read(in, events, sizeof events) > 0) continue;
      status = sq_floor_claim_all(h, f, st_take, st_note);
    }
  }
  if (in >= 0) close(in);
  sqlite3_finalize(st_take);
  sqlite3_finalize(st_note);
  jobq_close(db);
  return status;
}

/* The floor's table: the fenced protocol's state and claim, and when each
 * row was put and claimed, in Unix ns.  1, or 0 with the error in err. */
static int floor_create(void *native, const struct floor *f, char *err, size_t size) {
  char sql[384];
  if (f->cfg->store == BENCH_POSTGRES)
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (id bigserial PRIMARY KEY, state smallint NOT NULL DEFAULT 0, "
             "claim bigint, stamp_ns bigint NOT NULL, started_ns bigint); "
             "CREATE INDEX ON %s(id) WHERE state = 0",
             f->table, f->table);
  else
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (id INTEGER PRIMARY KEY, state INTEGER NOT NULL DEFAULT 0, "
             "claim INTEGER, stamp_ns INTEGER NOT NULL, started_ns INTEGER); "
             "CREATE INDEX %s_ready ON %s(id) WHERE state = 0",
             f->table, f->table, f->table);
  return bare_exec(f->cfg, native, sql, err, size);
}

/* Puts one row stamped now by put (PostgreSQL: its text; SQLite: st): 1,
 * or 0 with the error in err. */
static int floor_put_row(void *native, const struct floor *f, const char *put,
                         sqlite3_stmt *st, char *err, size_t size) {
  int64_t stamp = bench_wall_ns();
  if (st != NULL) {
    sqlite3_bind_int64(st, 1, stamp);
    int ok = sqlite3_step(st) == SQLITE_DONE || sq_fail(native, err, size);
    sqlite3_reset(st);
    return ok;
  }
  char text[24];
  snprintf(text, sizeof text, "%lld", (long long)stamp);
  const char *v[] = {text, f->channel};
  return pg_ok(PQexecParams(native, put, 2, NULL, v, NULL, NULL, 0), err, size);
}

/* Puts the rows at the latency workload's pace, each stamped just before
 * its statement goes; 0, or -1 after a message in run. */
static int floor_put(void *native, const struct floor *f, struct bench_run *run) {
  char put[256], err[512];
  sqlite3_stmt *st = NULL;
  if (f->cfg->store == BENCH_POSTGRES) {
    snprintf(put, sizeof put,
             "WITH i AS (INSERT INTO %s(stamp_ns) VALUES ($1::bigint) RETURNING 1) "
             "SELECT pg_notify($2, '') FROM i",
             f->table);
  } else {
    snprintf(put, sizeof put, "INSERT INTO %s(stamp_ns) VALUES (?1)", f->table);
    if ((st = sq_prepare(native, put, err, sizeof err)) == NULL) {
      bench_fail(run, "latency floor: %s", err);
      return -1;
    }
  }
  struct cli_progress bar;
  cli_progress_start(&bar, "ceiling (latency floor):", "rows", f->n);
  double t0 = bench_now();
  int status = 0;
  for (int64_t i = 0; i < f->n && status == 0 && !bench_stop; i++) {
    bench_pace(t0, i, bench_latency_rate(f->cfg));
    if (!floor_put_row(native, f, put, st, err, sizeof err)) {
      bench_fail(run, "latency floor: putting a row: %s", err);
      status = -1;
    }
    cli_progress_update(&bar, i + 1, i + 1);
  }
  cli_progress_end(&bar);
  sqlite3_finalize(st);
  return status;
}

/* The claims' latencies in ms, sorted, the warm-up row left out: *n of
 * them in *out (the caller frees it); 0, or -1 after a message in run. */
static int floor_read(void *native, const struct floor *f, double **out, size_t *n,
                      struct bench_run *run) {
  char sql[256], err[512];
  snprintf(sql, sizeof sql,
           "SELECT (started_ns - stamp_ns) / 1e6 FROM %s WHERE started_ns IS NOT NULL "
           "AND id > (SELECT min(id) FROM %s)",
           f->table, f->table);
  *n = 0;
  *out = cli_xmalloc((size_t)f->n * sizeof **out);
  int ok;
  if (f->cfg->store == BENCH_POSTGRES) {
    PGresult *res = PQexec(native, sql);
    ok = PQresultStatus(res) == PGRES_TUPLES_OK;
    for (int i = 0; ok && i < PQntuples(res) && *n < (size_t)f->n; i++)
      (*out)[(*n)++] = strtod(PQgetvalue(res, i, 0), NULL);
    pg_ok(res, err, sizeof err);
  } else {
    sqlite3_stmt *st = sq_prepare(native, sql, err, sizeof err);
    int rc = SQLITE_ERROR;
    while (st != NULL && (rc = sqlite3_step(st)) == SQLITE_ROW && *n < (size_t)f->n)
      (*out)[(*n)++] = sqlite3_column_double(st, 0);
    ok = rc == SQLITE_DONE || (st != NULL && sq_fail(native, err, sizeof err));
    sqlite3_finalize(st);
  }
  if (!ok) {
    bench_fail(run, "latency floor: reading the claims: %s", err);
    return -1;
  }
  bench_sort(*out, *n);
  return 0;
}

int bench_latency_floor(const struct bench_config *cfg, jobq *db,
                        struct bench_report *rep, struct bench_run *run) {
  void *native = jobq_native(db);
  if (native == NULL) return bench_lib_fail(run, db, JOBQ_ECONN, "the connection");
  struct floor f = {cfg, "", "", bench_latency_jobs(cfg) + 1, NULL};
  snprintf(f.table, sizeof f.table, "jobq_bench_floor_%ld", cfg->pid);
  snprintf(f.channel, sizeof f.channel, "jobq_bench_floor_%ld", cfg->pid);
  char err[512];
  if (!floor_create(native, &f, err, sizeof err))
    return bench_fail(run, "creating table '%s': %s", f.table, err);
  f.shared = bench_shared_new();
  int status = BENCH_OK;
  pid_t pid = bench_spawn(cfg->store == BENCH_POSTGRES ? pg_floor_listener : sq_floor_listener,
                          &f, 0, f.shared);
  if (pid < 0) status = bench_fail(run, "cannot start the latency floor's listener");
  /* The listener listens before the first put. */
  while (status == BENCH_OK && atomic_load(&f.shared->ready) < 1) {
    if (bench_stop) {
      status = bench_fail(run, "interrupted");
    } else if (waitpid(pid, NULL, WNOHANG) != 0) {
      pid = -1;
      status = bench_fail(run, "the latency floor's listener could not start");
    } else {
      bench_sleep(0.005);
    }
  }
  close(f.shared->go[1]);
  f.shared->go[1] = -1;
  if (status == BENCH_OK && floor_put(native, &f, run) != 0) status = BENCH_FAILED;
  /* It ends once it has claimed every row, milliseconds after the last
   * put: 30 s is a hung one (stopped, and found out below by the rows it
   * did not claim); after a failure it is stopped at once. */
  if (pid > 0 && bench_wait(pid, status == BENCH_OK ? 30 : 0.01) != 0 && status == BENCH_OK)
    status = bench_fail(run, "the latency floor's listener failed (%lld of %lld rows claimed)",
                        (long long)atomic_load(&f.shared->claimed), (long long)f.n);
  if (status == BENCH_OK && bench_stop) status = bench_fail(run, "interrupted");
  double *v = NULL;
  size_t nv = 0;
  if (status == BENCH_OK && floor_read(native, &f, &v, &nv, run) != 0) status = BENCH_FAILED;
  if (status == BENCH_OK && nv != (size_t)(f.n - 1))
    status = bench_fail(run, "latency floor: %zu of %lld rows were claimed", nv,
                        (long long)(f.n - 1));
  if (status == BENCH_OK) {
    bench_add(rep, "ceiling", "latency floor", "p50", bench_percentile(v, nv, 50), "ms");
    bench_add(rep, "ceiling", "latency floor", "p99", bench_percentile(v, nv, 99), "ms");
    bench_add(rep, "ceiling", "latency floor", "max", v[nv - 1], "ms");
  }
  free(v);
  bench_shared_free(f.shared);
  char drop[96];
  snprintf(drop, sizeof drop, "DROP TABLE IF EXISTS %s", f.table);
  if (!bare_exec(cfg, native, drop, err, sizeof err)) {
    cli_error("could not drop table '%s': %s", f.table, err);
    if (status == BENCH_OK) status = bench_fail(run, "dropping table '%s': %s", f.table, err);
  }
  return status;
}

/* ---------------------------------------------------------------- the workload */

static int child(const void *arg, int index) {
  const struct ceiling *c = arg;
  (void)index;
  jobq *db;
  void *native = open_native(c->cfg, &db);
  atomic_fetch_add(&c->shared->ready, 1);
  if (native == NULL) return 1;
  bench_await_go(c->shared, 1e9);
  int status = c->cfg->store == BENCH_POSTGRES ? pg_claimer(native, c)
               : c->cfg->store == BENCH_MYSQL  ? my_claimer(native, c)
                                               : sq_claimer(native, c);
  jobq_close(db);
  return status;
}

int bench_ceiling_rate(const struct bench_config *cfg, jobq *db, int procs, size_t batch,
                       int mode, int64_t rows, const char *label, double *rate,
                       struct bench_run *run) {
  void *native = jobq_native(db);
  if (native == NULL) return bench_lib_fail(run, db, JOBQ_ECONN, "the connection");
  struct ceiling c = {cfg, "", batch, mode != BENCH_BARE, mode == BENCH_ARCHIVED, "", NULL};
  snprintf(c.table, sizeof c.table, "jobq_bench_ceiling_%ld", cfg->pid);
  snprintf(c.archive, sizeof c.archive, "jobq_bench_archive_%ld", cfg->pid);
  char err[512] = "";
  int created = cfg->store == BENCH_POSTGRES ? pg_create(native, &c, rows, err, sizeof err)
                : cfg->store == BENCH_MYSQL  ? my_create(native, &c, rows, err, sizeof err)
                                             : sq_create(native, &c, rows, err, sizeof err);
  int status = BENCH_OK;
  if (created != 0) {
    status = bench_fail(run, "creating table '%s': %s", c.table, err);
  } else if (bench_stop) {
    status = bench_fail(run, "interrupted");
  } else {
    c.shared = bench_shared_new();
    double secs;
    int bad = bench_fork(procs, child, &c, c.shared, label, rows, NULL, NULL, &secs);
    long long claimed = atomic_load(&c.shared->claimed);
    bench_shared_free(c.shared);
    if (bench_stop)
      status = bench_fail(run, "interrupted");
    else if (bad)
      status = bench_fail(run, "a claimer process failed");
    else if (claimed != rows)
      status = bench_fail(run, "%lld of %lld rows were claimed", claimed, (long long)rows);
    else
      *rate = (double)rows / secs;
  }
  /* The tables go, whatever happened. */
  char sql[64 + sizeof c.table + sizeof c.archive];
  if (cfg->store == BENCH_SQLITE)
    snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s; DROP TABLE IF EXISTS %s", c.table,
             c.archive);
  else
    snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s, %s", c.table, c.archive);
  int dropped = bare_exec(cfg, native, sql, err, sizeof err);
  if (!dropped) {
    cli_error("could not drop table '%s': %s", c.table, err);
    if (status == BENCH_OK) status = bench_fail(run, "dropping table '%s': %s", c.table, err);
  }
  return status;
}

int bench_ceiling(const struct bench_config *cfg, jobq *db,
                  struct bench_report *rep, struct bench_run *run) {
  /* Its bare SQL runs on the store's own connection, with jobq's
   * settings, and the latency floor listens on it: through a pooler in
   * transaction mode neither stays with the connection. */
  if (cfg->store == BENCH_POSTGRES && strstr(cfg->url, "pooler=transaction") != NULL) {
    snprintf(run->why, sizeof run->why,
             "the bare SQL needs a connection of its own: run it without pooler=transaction");
    return BENCH_SKIPPED;
  }
  int procs = (int)(cfg->concurrency > 0 ? cfg->concurrency : DEFAULT_CONCURRENCY);
  size_t batch = cfg->batch > 0 ? (size_t)cfg->batch : 100;
  static const struct {
    int mode;
    const char *label, *variant;
  } protocols[] = {{BENCH_BARE, "ceiling:", "bare sql"},
                   {BENCH_FENCED, "ceiling (fenced):", "fenced sql"},
                   {BENCH_ARCHIVED, "ceiling (archived):", "archived sql"}};
  for (size_t i = 0; i < sizeof protocols / sizeof protocols[0]; i++) {
    double rate;
    int status = bench_ceiling_rate(cfg, db, procs, batch, protocols[i].mode, cfg->jobs,
                                    protocols[i].label, &rate, run);
    if (status != BENCH_OK) return status;
    bench_add(rep, "ceiling", protocols[i].variant, "throughput", rate, "jobs/s");
  }
  if (bench_insert_ceiling(cfg, db, rep, run) != BENCH_OK) return BENCH_FAILED;
  /* MariaDB/MySQL has nothing to wake a listener with: a worker polls, and
   * a floor there would be the poll interval chosen for it. */
  return cfg->store != BENCH_MYSQL ? bench_latency_floor(cfg, db, rep, run) : BENCH_OK;
}
