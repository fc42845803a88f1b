/*
 * insert.c - the bare bulk INSERT of the `ceiling` workload: how fast
 * this server takes the rows of the enqueue workload's batched puts with
 * no jobq logic at all, so that enqueue can be read as a share of it.  A
 * table of its own (jobq_bench_insert_PID) copies jobq_jobs, its columns,
 * defaults and indexes (LIKE), and gets --jobs rows, the batched puts'
 * own (queue, priority, run time, ready, payload "x", the default
 * attempts, timeout and backoff, a creation time), a batch of them (the
 * enqueue workload's batch) in each statement, one commit each:
 * INSERT ... SELECT FROM unnest() of a binary array a column on
 * PostgreSQL, a multi-row INSERT ... VALUES on MariaDB/MySQL.  Neither
 * reads back the ids, looks for barriers or ordering keys, or makes sure
 * of the queue, as a put does.  On one connection, as the enqueue
 * workload puts.  The table is dropped at the end.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "output.h"
#include "sql.h"
#include "util.h"

#define COLUMNS "queue, priority, run_at, state, payload, max_attempts, timeout_ms, " \
                "backoff_ms, created_at"
#define NCOLS 9

/* ---------------------------------------------------------------- PostgreSQL */

/* A one-dimensional array in PostgreSQL's binary format (array_recv). */
struct pg_array {
  char *p;
  size_t len, cap;
};

static void arr_put(struct pg_array *a, const void *p, size_t n) {
  if (a->len + n > a->cap) {
    a->cap = (a->len + n) * 2;
    a->p = realloc(a->p, a->cap);
    if (a->p == NULL) {
      cli_error("out of memory");
      exit(1);
    }
  }
  memcpy(a->p + a->len, p, n);
  a->len += n;
}

static void arr_i32(struct pg_array *a, uint32_t v) {
  v = htonl(v);
  arr_put(a, &v, 4);
}

/* n elements of type oid, each the size bytes at value (an int8 in host
 * order when size is 0). */
static void arr_fill(struct pg_array *a, uint32_t oid, size_t n, const void *value,
                     size_t size) {
  a->len = 0;
  arr_i32(a, 1);  /* dimensions */
  arr_i32(a, 0);  /* no NULLs */
  arr_i32(a, oid);
  arr_i32(a, (uint32_t)n);
  arr_i32(a, 1);  /* lower bound */
  for (size_t i = 0; i < n; i++) {
    if (size == 0) {
      uint64_t v = (uint64_t)*(const int64_t *)value;
      arr_i32(a, 8);
      arr_i32(a, (uint32_t)(v >> 32));
      arr_i32(a, (uint32_t)v);
    } else {
      arr_i32(a, (uint32_t)size);
      arr_put(a, value, size);
    }
  }
}

static int pg_run(PGconn *pc, const char *sql, char *err, size_t size) {
  PGresult *res = PQexec(pc, sql);
  int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
  if (!ok) snprintf(err, size, "%s", PQresultErrorMessage(res));
  PQclear(res);
  return ok;
}

/* The rows of k puts as the statement's nine arrays. */
static void pg_rows(struct pg_array *cols, size_t k, const char *queue, int64_t now) {
  enum { OID_BYTEA = 17, OID_INT8 = 20, OID_TEXT = 25 };
  const int64_t zero = 0, attempts = JOBQ_DEFAULT_MAX_ATTEMPTS,
                backoff = JOBQ_DEFAULT_BACKOFF_MS;
  arr_fill(&cols[0], OID_TEXT, k, queue, strlen(queue));
  arr_fill(&cols[1], OID_INT8, k, &zero, 0);
  arr_fill(&cols[2], OID_INT8, k, &now, 0);
  arr_fill(&cols[3], OID_TEXT, k, "ready", 5);
  arr_fill(&cols[4], OID_BYTEA, k, "x", 1);
  arr_fill(&cols[5], OID_INT8, k, &attempts, 0);
  arr_fill(&cols[6], OID_INT8, k, &zero, 0);
  arr_fill(&cols[7], OID_INT8, k, &backoff, 0);
  arr_fill(&cols[8], OID_INT8, k, &now, 0);
}

/* The statement and its arrays, made again when the batch's size changes. */
struct pg_insert {
  PGconn *pc;
  char sql[512];
  const char *queue;
  int64_t now;
  size_t built;
  struct pg_array cols[NCOLS];
};

static int pg_insert(void *ctx, size_t k, char *err, size_t size) {
  struct pg_insert *p = ctx;
  const char *values[NCOLS];
  int lengths[NCOLS], formats[NCOLS];
  if (k != p->built) pg_rows(p->cols, k, p->queue, p->now);
  p->built = k;
  for (int i = 0; i < NCOLS; i++) {
    values[i] = p->cols[i].p;
    lengths[i] = (int)p->cols[i].len;
    formats[i] = 1;
  }
  PGresult *res = PQexecParams(p->pc, p->sql, NCOLS, NULL, values, lengths, formats, 0);
  int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
  if (!ok) snprintf(err, size, "%s", PQresultErrorMessage(res));
  PQclear(res);
  return ok;
}

/* ---------------------------------------------------------------- MariaDB / MySQL */

static int my_run(MYSQL *my, const char *sql, char *err, size_t size) {
  if (mysql_query(my, sql) == 0) return 1;
  snprintf(err, size, "%s", mysql_error(my));
  return 0;
}

/* The INSERT of k rows, prepared and bound to b (NCOLS * k binds). */
static MYSQL_STMT *my_prepare_rows(MYSQL *my, const char *table, size_t k, MYSQL_BIND *b,
                                   const char *queue, const int64_t *ints,
                                   const unsigned long *lens, char *err, size_t size) {
  size_t cap = 128 + k * 24;
  char *sql = cli_xmalloc(cap);
  size_t o = (size_t)snprintf(sql, cap, "INSERT INTO %s(" COLUMNS ") VALUES ", table);
  for (size_t i = 0; i < k; i++)
    o += (size_t)snprintf(sql + o, cap - o, "%s(?,?,?,?,?,?,?,?,?)", i ? "," : "");
  memset(b, 0, NCOLS * k * sizeof *b);
  for (size_t i = 0; i < k; i++) {
    MYSQL_BIND *r = b + NCOLS * i;
    r[0] = (MYSQL_BIND){.buffer_type = MYSQL_TYPE_STRING, .buffer = (void *)queue,
                        .length = (unsigned long *)&lens[0]};
    r[3] = (MYSQL_BIND){.buffer_type = MYSQL_TYPE_STRING, .buffer = "ready",
                        .length = (unsigned long *)&lens[1]};
    r[4] = (MYSQL_BIND){.buffer_type = MYSQL_TYPE_BLOB, .buffer = "x",
                        .length = (unsigned long *)&lens[2]};
    static const int cols[] = {1, 2, 5, 6, 7, 8};
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
      r[cols[c]] = (MYSQL_BIND){.buffer_type = MYSQL_TYPE_LONGLONG,
                                .buffer = (void *)&ints[cols[c]]};
  }
  MYSQL_STMT *st = mysql_stmt_init(my);
  if (st == NULL) {
    snprintf(err, size, "out of memory");
  } else if (mysql_stmt_prepare(st, sql, strlen(sql)) != 0 ||
             mysql_stmt_bind_param(st, b) != 0) {
    snprintf(err, size, "%s", mysql_stmt_error(st));
    mysql_stmt_close(st);
    st = NULL;
  }
  free(sql);
  return st;
}

struct my_insert {
  MYSQL *my;
  const char *table, *queue;
  int64_t ints[NCOLS];     /* each column's value, by its place in COLUMNS */
  unsigned long lens[3];
  MYSQL_BIND *b;
  MYSQL_STMT *st;
  size_t prepared;
};

static int my_insert(void *ctx, size_t k, char *err, size_t size) {
  struct my_insert *m = ctx;
  if (k != m->prepared) {
    if (m->st != NULL) mysql_stmt_close(m->st);
    m->st = my_prepare_rows(m->my, m->table, k, m->b, m->queue, m->ints, m->lens, err, size);
    m->prepared = k;
    if (m->st == NULL) return 0;
  }
  if (mysql_stmt_execute(m->st) == 0) return 1;
  snprintf(err, size, "%s", mysql_stmt_error(m->st));
  return 0;
}

/* Puts rows in batches of batch rows, a call of one for each: 1, with
 * how long they took in *secs, or 0 with the error in err. */
static int insert_all(int64_t rows, size_t batch, int (*one)(void *, size_t, char *, size_t),
                      void *ctx, double *secs, char *err, size_t size) {
  int ok = 1;
  struct cli_progress bar;
  cli_progress_start(&bar, "ceiling (insert):", "rows", rows);
  double t0 = bench_now();
  for (int64_t done = 0; done < rows && ok && !bench_stop;) {
    size_t k = rows - done < (int64_t)batch ? (size_t)(rows - done) : batch;
    ok = one(ctx, k, err, size);
    done += (int64_t)k;
    cli_progress_update(&bar, done, done);
  }
  *secs = bench_now() - t0;
  cli_progress_end(&bar);
  return ok;
}

/* ---------------------------------------------------------------- the figure */

int bench_insert_ceiling(const struct bench_config *cfg, jobq *db, struct bench_report *rep,
                         struct bench_run *run) {
  if (cfg->store == BENCH_SQLITE) return BENCH_OK;
  void *native = jobq_native(db);
  if (native == NULL) return bench_lib_fail(run, db, JOBQ_ECONN, "the connection");
  int pg = cfg->store == BENCH_POSTGRES;
  char table[64], queue[BENCH_QUEUE_BUF], sql[256], err[512] = "";
  snprintf(table, sizeof table, "jobq_bench_insert_%ld", cfg->pid);
  bench_queue(cfg, "insert", queue);
  size_t batch = cfg->batch > 0 ? (size_t)cfg->batch : 1000;
  if (pg)
    snprintf(sql, sizeof sql, "CREATE TABLE %s (LIKE jobq_jobs INCLUDING ALL)", table);
  else
    snprintf(sql, sizeof sql, "CREATE TABLE %s LIKE jobq_jobs", table);
  int status = BENCH_OK;
  double secs = 0;
  if (!(pg ? pg_run(native, sql, err, sizeof err) : my_run(native, sql, err, sizeof err)))
    return bench_fail(run, "creating table '%s': %s", table, err);
  int64_t now = (int64_t)(bench_wall_ns() / 1000000);
  int ok;
  if (pg) {
    struct pg_insert p = {.pc = native, .queue = queue, .now = now};
    snprintf(p.sql, sizeof p.sql,
             "INSERT INTO %s(" COLUMNS ") SELECT * FROM unnest($1::text[], $2::bigint[], "
             "$3::bigint[], $4::text[], $5::bytea[], $6::bigint[], $7::bigint[], "
             "$8::bigint[], $9::bigint[])",
             table);
    ok = insert_all(cfg->jobs, batch, pg_insert, &p, &secs, err, sizeof err);
    for (int i = 0; i < NCOLS; i++) free(p.cols[i].p);
  } else {
    struct my_insert m = {.my = native, .table = table, .queue = queue,
                          .ints = {0, 0, now, 0, 0, JOBQ_DEFAULT_MAX_ATTEMPTS, 0,
                                   JOBQ_DEFAULT_BACKOFF_MS, now},
                          .lens = {strlen(queue), 5, 1}};
    m.b = cli_xmalloc(NCOLS * batch * sizeof *m.b);
    ok = insert_all(cfg->jobs, batch, my_insert, &m, &secs, err, sizeof err);
    if (m.st != NULL) mysql_stmt_close(m.st);
    free(m.b);
  }
  if (bench_stop)
    status = bench_fail(run, "interrupted");
  else if (!ok)
    status = bench_fail(run, "bare insert: %s", err);
  else
    bench_add(rep, "ceiling", "bare insert", "throughput", (double)cfg->jobs / secs,
              "jobs/s");
  snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", table);
  if (!(pg ? pg_run(native, sql, err, sizeof err) : my_run(native, sql, err, sizeof err))) {
    cli_error("could not drop table '%s': %s", table, err);
    if (status == BENCH_OK) status = bench_fail(run, "dropping table '%s': %s", table, err);
  }
  return status;
}
