/*
 * soak.c - the `soak` workload of `jobq bench`: a steady load for a
 * long time, to show whether the queue stays as fast as it started.  One
 * producer process puts --rate jobs a second (default 5000) in a batch
 * every 10 ms; --concurrency claimer processes (default 4) claim them in
 * batches of --batch (default 100), each completing its last batch in the
 * next claim's transaction.  It runs --seconds (default 1800), in windows
 * of a minute (a third of the run when it is shorter than three minutes),
 * and reports the claim time's p50 and p99 in the first and the last
 * window and the spread of every window's p99, the rates reached, and
 * the hot table's size and its indexes',
 * taken at the end of every window: after the first, the most in each
 * half of the run, at the end.  --json and --csv also hold every
 * window's claims, p50, p99 and sizes, a series to draw.  Not part of
 * `all`: it is long.
 *
 * The sizes are the store's own: PostgreSQL's pg_relation_size and
 * pg_indexes_size, InnoDB's statistics in information_schema.TABLES, and
 * SQLite's dbstat table, each of jobq_jobs only (the archive grows by
 * design until it is pruned).
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "output.h"
#include "sql.h"
#include "util.h"

#define DEFAULT_SECONDS 1800
#define DEFAULT_RATE 5000
#define DEFAULT_CLAIMERS 4
#define TICK_S 0.01           /* the producer's rhythm */
#define MIB 1048576.0

struct soak {
  const struct bench_config *cfg;
  struct bench_claimer claimer;
  double rate;                /* jobs a second */
  double until;
  jobq *db;                   /* the parent's, for the sizes */
  int64_t *table, *index;     /* bytes at the end of each window; -1: unknown */
  size_t sampled;             /* windows whose sizes were taken */
};

/* ---------------------------------------------------------------- sizes */

/* The bytes of jobq_jobs and of its indexes on db; -1 where unknown. */
static void sizes(const struct soak *k, int64_t *table, int64_t *index) {
  *table = *index = -1;
  void *native = jobq_native(k->db);
  if (native == NULL) return;
  if (k->cfg->store == BENCH_POSTGRES) {
    PGresult *r = PQexec(native,
                         "SELECT pg_relation_size('jobq_jobs'), "
                         "pg_indexes_size('jobq_jobs')");
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
      *table = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
      *index = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    }
    PQclear(r);
  } else if (k->cfg->store == BENCH_MYSQL) {
    const char *sql = "SELECT data_length, index_length FROM information_schema.TABLES "
                      "WHERE table_schema = DATABASE() AND table_name = 'jobq_jobs'";
    if (mysql_query(native, sql) != 0) return;
    MYSQL_RES *res = mysql_store_result(native);
    MYSQL_ROW row = res != NULL ? mysql_fetch_row(res) : NULL;
    if (row != NULL && row[0] != NULL && row[1] != NULL) {
      *table = strtoll(row[0], NULL, 10);
      *index = strtoll(row[1], NULL, 10);
    }
    if (res != NULL) mysql_free_result(res);
  } else {
    sqlite3_stmt *st;
    const char *sql =
        "SELECT coalesce(sum(CASE WHEN s.type = 'table' THEN d.pgsize END), 0), "
        "coalesce(sum(CASE WHEN s.type = 'index' THEN d.pgsize END), 0) "
        "FROM dbstat d JOIN sqlite_schema s ON s.name = d.name "
        "WHERE s.tbl_name = 'jobq_jobs'";
    if (sqlite3_prepare_v2(native, sql, -1, &st, NULL) != SQLITE_OK) return;
    if (sqlite3_step(st) == SQLITE_ROW) {
      *table = sqlite3_column_int64(st, 0);
      *index = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
  }
}

/* In the parent, every 5 ms: the sizes at the end of each window. */
static void tick(void *ctx) {
  struct soak *k = ctx;
  const struct bench_hist *h = k->claimer.hist;
  if (k->sampled >= h->windows ||
      bench_now() < h->t0 + (double)(k->sampled + 1) * h->window)
    return;
  sizes(k, &k->table[k->sampled], &k->index[k->sampled]);
  k->sampled++;
}

/* The most of sizes from window from to window to (excluded); -1 if one
 * is unknown. */
static int64_t most(const int64_t *sizes_w, size_t from, size_t to) {
  int64_t m = 0;
  for (size_t w = from; w < to; w++) {
    if (sizes_w[w] < 0) return -1;
    if (sizes_w[w] > m) m = sizes_w[w];
  }
  return m;
}

/* One object's sizes: after the first window, the most in each half of
 * the windows after it (the first comes before the database's first
 * cleanup), at the end, and the second half's most over
 * the first's, which stays near 1 when the size has levelled off. */
static void add_sizes(struct bench_report *rep, const char *what, const int64_t *w,
                      size_t n) {
  size_t half = 1 + (n - 1) / 2;
  int64_t first = most(w, 1, half), second = most(w, half, n);
  if (w[0] < 0 || w[n - 1] < 0 || first < 0 || second < 0) return;
  bench_add(rep, "soak", what, "after the first window", (double)w[0] / MIB, "MiB");
  bench_add(rep, "soak", what, "most, first half", (double)first / MIB, "MiB");
  bench_add(rep, "soak", what, "most, second half", (double)second / MIB, "MiB");
  bench_add(rep, "soak", what, "at the end", (double)w[n - 1] / MIB, "MiB");
  if (first > 0)
    bench_add(rep, "soak", what, "second half / first", (double)second / (double)first, "x");
}

/* Every window's claims, claim p50 and p99, and the sizes at its end,
 * as a series: whether the queue stays as it started is read from their
 * course, which the rows above sum up. */
static void add_windows(struct bench_report *rep, const struct soak *k, size_t windows) {
  const struct bench_hist *h = k->claimer.hist;
  for (size_t w = 0; w < windows; w++) {
    char variant[48];
    snprintf(variant, sizeof variant, "window to %.0f s", (double)(w + 1) * h->window);
    long long claims;
    double p99 = bench_hist_percentile(h, w, 99, &claims);
    bench_add_series(rep, "soak", variant, "claims", (double)claims, "claims");
    if (claims > 0) {
      bench_add_series(rep, "soak", variant, "claim p50",
                       bench_hist_percentile(h, w, 50, NULL), "ms");
      bench_add_series(rep, "soak", variant, "claim p99", p99, "ms");
    }
    if (w < k->sampled || w == windows - 1) {
      if (k->table[w] >= 0)
        bench_add_series(rep, "soak", variant, "hot table", (double)k->table[w] / MIB, "MiB");
      if (k->index[w] >= 0)
        bench_add_series(rep, "soak", variant, "its indexes", (double)k->index[w] / MIB,
                         "MiB");
    }
  }
}

/* ---------------------------------------------------------------- children */

/* Puts rate jobs a second, a batch every TICK_S, on time: a batch late
 * for its tick makes up for it at once, up to a second's worth. */
static int producer(const struct soak *k) {
  struct bench_shared *sh = k->claimer.shared;
  jobq *db;
  int rc = jobq_open(k->cfg->url, &db);
  atomic_fetch_add(&sh->ready, 1);
  if (rc == JOBQ_OK) bench_await_go(sh, 1e9);
  enum { MAX = 1000 };
  jobq_put_opts *opts = cli_xmalloc(MAX * sizeof *opts);
  int64_t *ids = cli_xmalloc(MAX * sizeof *ids);
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = k->claimer.queue;
  o.payload = "x";
  o.payload_len = 1;
  for (size_t i = 0; i < MAX; i++) opts[i] = o;
  /* The run's clock starts at the histogram's t0, which the children
   * are usually connected before: puts from then on, no earlier. */
  double t0 = k->claimer.hist->t0;
  bench_sleep(t0 - bench_now());
  int64_t put = 0;
  while (rc == JOBQ_OK && !bench_stop) {
    double now = bench_now();
    if (now >= k->until) break;
    int64_t due = (int64_t)(k->rate * (now - t0));
    if (due - put > (int64_t)k->rate) put = due - (int64_t)k->rate;
    while (rc == JOBQ_OK && put < due) {
      size_t n = due - put > MAX ? MAX : (size_t)(due - put);
      rc = jobq_put_many(db, opts, n, ids, NULL);
      if (rc == JOBQ_EBUSY) {
        rc = JOBQ_OK;
        continue;
      }
      if (rc == JOBQ_OK) {
        put += (int64_t)n;
        atomic_fetch_add(&sh->put, (long long)n);
      }
    }
    double next = t0 + TICK_S * (floor((bench_now() - t0) / TICK_S) + 1);
    bench_sleep(next - bench_now());
  }
  if (rc != JOBQ_OK && !bench_stop) cli_lib_error(db, rc);
  free(opts);
  free(ids);
  jobq_close(db);
  return rc == JOBQ_OK ? 0 : 1;
}

static int child(const void *arg, int index) {
  const struct soak *k = arg;
  return index == 0 ? producer(k) : bench_claimer_child(&k->claimer, index);
}

/* ---------------------------------------------------------------- the workload */

static void add(struct bench_report *rep, const char *variant, const char *metric,
                double value, const char *unit) {
  bench_add(rep, "soak", variant, metric, value, unit);
}

int bench_soak(const struct bench_config *cfg, jobq *db, struct bench_report *rep,
               struct bench_run *run) {
  char q[BENCH_QUEUE_BUF];
  bench_queue(cfg, "soak", q);
  double seconds = cfg->seconds > 0 ? (double)cfg->seconds : DEFAULT_SECONDS;
  double window = seconds < 180 ? seconds / 3 : 60;
  struct soak k;
  memset(&k, 0, sizeof k);
  k.cfg = cfg;
  k.db = db;
  k.rate = cfg->rate > 0 ? (double)cfg->rate : DEFAULT_RATE;
  size_t windows = (size_t)ceil(seconds / window);
  struct bench_claimer *c = &k.claimer;
  c->url = cfg->url;
  c->queue = q;
  c->batch = cfg->batch > 0 ? (size_t)cfg->batch : 100;
  c->shared = bench_shared_new();
  c->hist = bench_hist_new(windows, window);
  k.table = cli_xmalloc(windows * sizeof *k.table);
  k.index = cli_xmalloc(windows * sizeof *k.index);
  int n = 1 + (int)(cfg->concurrency > 0 ? cfg->concurrency : DEFAULT_CLAIMERS);
  /* The clock of the run starts when the children are connected, which
   * is soon: the windows and the end are counted from now. */
  c->hist->t0 = bench_now() + 0.5;
  c->until = k.until = c->hist->t0 + seconds;
  char label[64];
  snprintf(label, sizeof label, "soak (%.0f jobs/s, %.0f s):", k.rate, seconds);
  double secs;
  int bad = bench_fork(n, child, &k, c->shared, label, (int64_t)(k.rate * seconds), tick,
                       &k, &secs);
  long long put = atomic_load(&c->shared->put), claimed = atomic_load(&c->shared->claimed);
  int status = BENCH_OK;
  if (bench_stop) {
    status = bench_fail(run, "interrupted");
  } else if (bad) {
    status = bench_fail(run, "a producer or claimer process failed");
  } else {
    char variant[64];
    snprintf(variant, sizeof variant, "%.0f jobs/s", k.rate);
    add(rep, variant, "put", (double)put / seconds, "jobs/s");
    add(rep, variant, "done", (double)claimed / seconds, "jobs/s");
    add(rep, variant, "left ready", (double)(put - claimed), "jobs");
    double p99[2];
    for (int i = 0; i < 2; i++) {
      size_t w = i == 0 ? 0 : windows - 1;
      snprintf(variant, sizeof variant, "claim, %s %.0f s", i == 0 ? "first" : "last",
               window);
      p99[i] = bench_hist_percentile(c->hist, w, 99, NULL);
      add(rep, variant, "p50", bench_hist_percentile(c->hist, w, 50, NULL), "ms");
      add(rep, variant, "p99", p99[i], "ms");
    }
    if (p99[0] > 0) add(rep, "claim p99", "last / first", p99[1] / p99[0], "x");
    /* Every window's p99, to tell a trend from one window's chance: the
     * first window comes before the server's first checkpoint, and one
     * window's p99 is its slowest hundredth of claims alone. */
    double *all = cli_xmalloc(windows * sizeof *all);
    size_t nall = 0;
    for (size_t w = 0; w < windows; w++) {
      long long claims;
      double v = bench_hist_percentile(c->hist, w, 99, &claims);
      if (claims > 0) all[nall++] = v;
    }
    if (nall >= 3) {
      bench_sort(all, nall);
      add(rep, "claim p99", "least window", all[0], "ms");
      add(rep, "claim p99", "median window", all[nall / 2], "ms");
      add(rep, "claim p99", "most window", all[nall - 1], "ms");
    }
    free(all);
    /* The last window ends as the children do: its sizes are taken now. */
    if (k.sampled < windows) sizes(&k, &k.table[windows - 1], &k.index[windows - 1]);
    if (k.sampled + 1 >= windows && windows >= 3) {
      add_sizes(rep, "hot table", k.table, windows);
      add_sizes(rep, "its indexes", k.index, windows);
    }
    add_windows(rep, &k, windows);
  }
  free(k.table);
  free(k.index);
  bench_hist_free(c->hist);
  bench_shared_free(c->shared);
  return status;
}
