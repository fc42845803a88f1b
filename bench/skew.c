/*
 * skew.c - the skew workload of `jobq bench`: one hot ordering key
 * carries half of the jobs, the other half is spread over many keys, and
 * the library's claimers drain them, once with the queue in one piece
 * and once in parts (a part per claimer, or --parts K per claimer).  A
 * key's jobs run one at a time, so the hot key goes at the pace of one
 * job per claim of whoever holds its head, whatever the parts; what the
 * parts change is who else waits for it.  The run says when the last job
 * of each kind was claimed: the hot key's, the other keys' of the hot
 * key's part (whose owner also carries the hot key), and the other
 * parts'.  A claimer that finds nothing to take waits before it claims
 * again (1 ms, doubling up to 50 ms), as a foreman waits for a wake-up,
 * so that the figures are not those of idle claimers crowding the
 * database.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "output.h"

/* Raises (or, with lower, lowers) *at to us, unless it is set and
 * already past it. */
static void stamp(atomic_llong *at, long long us, int lower) {
  long long was = atomic_load(at);
  while ((was == 0 || (lower ? us < was : us > was)) &&
         !atomic_compare_exchange_weak(at, &was, us)) {}
}

void bench_skew_note(const struct bench_claimer *c, const jobq_job *jobs, size_t n,
                     double began) {
  long long now = (long long)(bench_now() * 1e6);
  stamp(&c->shared->first_us, (long long)(began * 1e6), 1);
  int seen[3] = {0, 0, 0};
  for (size_t i = 0; i < n; i++) {
    const char *key = jobs[i].key != NULL ? jobs[i].key : "";
    int kind = strcmp(key, c->hot) == 0 ? BENCH_SKEW_HOT
               : c->parts > 1 && jobq_part_of(key, strlen(key), c->parts) == c->hot_part
                   ? BENCH_SKEW_NEAR
                   : BENCH_SKEW_FAR;
    seen[kind] = 1;
  }
  for (int k = 0; k < 3; k++)
    if (seen[k]) stamp(&c->shared->last_us[k], now, 0);
}

/* Puts n jobs into queue: every other one of the hot key, the rest
 * round the cold keys c0 .. c{cold - 1}. */
static int fill(jobq *db, const char *queue, const char *hot, int64_t n, int64_t cold) {
  enum { CHUNK = 1000 };
  static jobq_put_opts opts[CHUNK];
  static int64_t ids[CHUNK];
  static char keys[CHUNK][32];
  struct cli_progress bar;
  cli_progress_start(&bar, "skew (filling):", "jobs", n);
  int rc = JOBQ_OK;
  for (int64_t done = 0; done < n && rc == JOBQ_OK && !bench_stop;) {
    size_t k = n - done < CHUNK ? (size_t)(n - done) : CHUNK;
    for (size_t i = 0; i < k; i++) {
      int64_t j = done + (int64_t)i;
      jobq_put_opts_init(&opts[i]);
      opts[i].queue = queue;
      opts[i].payload = "x";
      opts[i].payload_len = 1;
      snprintf(keys[i], sizeof keys[i], "c%lld", (long long)((j / 2) % cold));
      opts[i].key = j % 2 == 0 ? hot : keys[i];
    }
    rc = jobq_put_many(db, opts, k, ids, NULL);
    done += (int64_t)k;
    cli_progress_update(&bar, done, done);
  }
  cli_progress_end(&bar);
  return rc;
}

/* One drain of n skewed jobs by procs claimers, the queue in parts
 * parts (1: one piece); adds its figures to rep. */
static int skew_run(const struct bench_config *cfg, jobq *db, int procs, int parts,
                    int64_t n, struct bench_report *rep, struct bench_run *run) {
  static const char hot[] = "hot";
  char q[BENCH_QUEUE_BUF], name[32], label[64], variant[64];
  snprintf(name, sizeof name, "skew-%d", parts);
  bench_queue(cfg, name, q);
  int rc = parts > 1 ? jobq_set_parts(db, q, parts) : JOBQ_OK;
  if (rc != JOBQ_OK) return bench_lib_fail(run, db, rc, "splitting the queue");
  /* Enough cold keys that every part has many. */
  int64_t cold = parts * 16 > 256 ? parts * 16 : 256;
  if ((rc = fill(db, q, hot, n, cold)) != JOBQ_OK)
    return bench_lib_fail(run, db, rc, "filling the queue");
  if (bench_stop) return bench_fail(run, "interrupted");
  struct bench_claimer c = {.url = cfg->url,
                            .queue = q,
                            .batch = cfg->batch > 0 ? (size_t)cfg->batch : 100,
                            .total = n,
                            .count_empty = 1,
                            .shared = bench_shared_new(),
                            .hot = hot,
                            .hot_part = jobq_part_of(hot, strlen(hot), parts),
                            .parts = parts};
  int saved = bench_parts;
  bench_parts = parts > 1; /* the claimers join the queue's parts */
  snprintf(label, sizeof label, "skew (%d part%s):", parts, parts > 1 ? "s" : "");
  double secs;
  int bad = bench_claimers(&c, procs, label, &secs);
  bench_parts = saved;
  double first = (double)atomic_load(&c.shared->first_us) / 1e6, last[3];
  for (int k = 0; k < 3; k++)
    last[k] = (double)atomic_load(&c.shared->last_us[k]) / 1e6 - first;
  bench_shared_free(c.shared);
  if (bench_stop) return bench_fail(run, "interrupted");
  snprintf(variant, sizeof variant, "%d claimers, %d part%s", procs, parts,
           parts > 1 ? "s" : "");
  if (bad) return bench_fail(run, "%s: a claimer process failed", variant);
  jobq_queue_stats st;
  int got = bench_queue_stats(db, q, &st);
  if (got <= 0 || st.done != n || st.dead != 0)
    return bench_fail(run, "%s: not every job ended done exactly once", variant);
  int64_t hot_jobs = (n + 1) / 2;
  bench_add(rep, "skew", variant, "throughput", (double)n / secs, "jobs/s");
  bench_add(rep, "skew", variant, "hot key: last claimed", last[BENCH_SKEW_HOT], "s");
  bench_add(rep, "skew", variant, "hot key: rate",
            (double)hot_jobs / last[BENCH_SKEW_HOT], "jobs/s");
  if (parts > 1)
    bench_add(rep, "skew", variant, "hot part's others: last claimed",
              last[BENCH_SKEW_NEAR], "s");
  bench_add(rep, "skew", variant,
            parts > 1 ? "other parts: last claimed" : "other keys: last claimed",
            last[BENCH_SKEW_FAR], "s");
  if ((rc = jobq_purge(db, q, NULL)) != JOBQ_OK)
    return bench_lib_fail(run, db, rc, "removing the jobs");
  return BENCH_OK;
}

int bench_skew(const struct bench_config *cfg, jobq *db, struct bench_report *rep,
               struct bench_run *run) {
  int procs = cfg->concurrency > 0 ? (int)cfg->concurrency : 8;
  int per = bench_parts > 0 ? bench_parts : 1;
  int parts = procs * per > JOBQ_PARTS_MAX ? JOBQ_PARTS_MAX : procs * per;
  int64_t n = cfg->jobs;
  run->verified = 0;
  if (skew_run(cfg, db, procs, 1, n, rep, run) != BENCH_OK) return BENCH_FAILED;
  if (parts > 1 && skew_run(cfg, db, procs, parts, n, rep, run) != BENCH_OK)
    return BENCH_FAILED;
  run->verified = 1;
  return BENCH_OK;
}
