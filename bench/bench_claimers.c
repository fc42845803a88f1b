/*
 * bench_claimers.c - claim throughput with many concurrent claimers on one
 * queue, over a small or a large backlog, through the public API on any
 * store (meant for the server stores: PostgreSQL, MariaDB).
 *
 * It fills queue "c" up to --ready jobs (jobq_put_many, 1000 a
 * transaction), then forks --claimers processes, each with its own handle
 * and session.  Each one loops for --seconds: claim --batch jobs (one
 * transaction), then in one more transaction complete them with
 * jobq_ack_many() and put as many new jobs, so that the backlog stays at
 * --ready for the whole run.  It prints the jobs claimed and completed per
 * second by all claimers together, and checks at the end that no job was
 * claimed by two claimers at once (every completion was accepted) and that
 * the backlog is still --ready.
 *
 * usage: bench_claimers --db URL [--claimers N] [--ready N] [--seconds S]
 *                       [--batch B]
 *   defaults: 8 claimers, 1000 ready, 10 seconds, batch 1.  The database
 *   must be initialised (jobq init); queue "c" is filled up to --ready
 *   (only jobs of earlier runs of the bench may be in it), and keeps them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jobq.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(jobq *db, const char *what, int rc) {
  fprintf(stderr, "bench_claimers: %s: %s: %s\n", what, jobq_err_name(rc),
          jobq_errmsg(db));
  exit(1);
}

static long parse_num(const char *opt, const char *v, long max) {
  char *end;
  long n = strtol(v, &end, 10);
  if (*end != '\0' || n < 1 || n > max) {
    fprintf(stderr, "bench_claimers: invalid %s '%s': expected 1 to %ld\n", opt, v, max);
    exit(2);
  }
  return n;
}

static void put_jobs(jobq *db, size_t n) {
  jobq_put_opts o[1000];
  int64_t ids[1000];
  for (size_t i = 0; i < 1000; i++) {
    jobq_put_opts_init(&o[i]);
    o[i].queue = "c";
    o[i].payload = "bench";
    o[i].payload_len = 5;
  }
  while (n > 0) {
    size_t k = n > 1000 ? 1000 : n;
    int rc = jobq_put_many(db, o, k, ids, NULL);
    if (rc != JOBQ_OK) die(db, "put", rc);
    n -= k;
  }
}

/* One claimer until the deadline; writes "done lost" to fd. */
static int claimer(const char *url, size_t batch, double deadline, int fd) {
  jobq *db = NULL;
  int rc = jobq_open(url, &db);
  if (rc != JOBQ_OK) die(db, "open", rc);
  jobq_session *s = NULL;
  if ((rc = jobq_session_open(db, NULL, &s)) != JOBQ_OK) die(db, "session", rc);
  jobq_ack *acks = calloc(batch, sizeof *acks);
  long done = 0, lost = 0;
  double beat = now_s();
  while (now_s() < deadline) {
    if (now_s() - beat > 1.0) {
      if ((rc = jobq_heartbeat(s, NULL, NULL)) != JOBQ_OK) die(db, "heartbeat", rc);
      beat = now_s();
    }
    jobq_job *jobs = NULL;
    size_t n = 0;
    const char *q = "c";
    if ((rc = jobq_claim(s, &q, 1, batch, &jobs, &n)) != JOBQ_OK) die(db, "claim", rc);
    if (n == 0) continue;
    for (size_t i = 0; i < n; i++) jobq_ack_init(&acks[i], &jobs[i], JOBQ_ACK_COMPLETE);
    /* The completions and as many new jobs, in one transaction. */
    for (int attempt = 0;; attempt++) {
      if ((rc = jobq_begin(db)) != JOBQ_OK) die(db, "begin", rc);
      rc = jobq_ack_many(s, acks, n);
      if (rc == JOBQ_OK) {
        jobq_put_opts o;
        jobq_put_opts_init(&o);
        o.queue = "c";
        o.payload = "bench";
        o.payload_len = 5;
        for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
          int64_t id;
          rc = jobq_put(db, &o, &id, NULL);
        }
      }
      if (rc == JOBQ_OK) rc = jobq_commit(db);
      else jobq_rollback(db);
      if (rc == JOBQ_OK) break;
      if (rc != JOBQ_EBUSY || attempt >= 10) die(db, "complete", rc);
    }
    for (size_t i = 0; i < n; i++) {
      if (acks[i].status == JOBQ_OK) done++;
      else lost++;
    }
    jobq_jobs_free(jobs, n);
  }
  jobq_session_close(s);
  jobq_close(db);
  free(acks);
  char line[64];
  int len = snprintf(line, sizeof line, "%ld %ld\n", done, lost);
  if (write(fd, line, (size_t)len) != len) return 1;
  return 0;
}

int main(int argc, char **argv) {
  const char *url = NULL;
  long nclaimers = 8, ready = 1000, seconds = 10, batch = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--db") && i + 1 < argc) url = argv[++i];
    else if (!strcmp(argv[i], "--claimers") && i + 1 < argc)
      nclaimers = parse_num("--claimers", argv[++i], 256);
    else if (!strcmp(argv[i], "--ready") && i + 1 < argc)
      ready = parse_num("--ready", argv[++i], 100000000);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = parse_num("--seconds", argv[++i], 3600);
    else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
      batch = parse_num("--batch", argv[++i], 1000);
    else {
      fprintf(stderr, "usage: bench_claimers --db URL [--claimers N] [--ready N] "
                      "[--seconds S] [--batch B]\n");
      return 2;
    }
  }
  if (url == NULL) {
    fprintf(stderr, "bench_claimers: --db URL is required\n");
    return 2;
  }
  jobq *db = NULL;
  int rc = jobq_open(url, &db);
  if (rc != JOBQ_OK) die(db, "open", rc);
  /* Fill up to --ready (a database of an earlier run keeps its jobs). */
  long have = 0;
  jobq_queue_stats *qs = NULL;
  size_t nq = 0;
  if ((rc = jobq_stats(db, &qs, &nq)) != JOBQ_OK) die(db, "stats", rc);
  for (size_t i = 0; i < nq; i++)
    if (strcmp(qs[i].name, "c") == 0) have = (long)(qs[i].ready + qs[i].running);
  jobq_stats_free(qs, nq);
  double t0 = now_s();
  if (have < ready) put_jobs(db, (size_t)(ready - have));
  printf("filled %ld ready jobs (%ld there before) in %.1f s\n", ready, have,
         now_s() - t0);
  fflush(stdout);

  int fds[2];
  if (pipe(fds) != 0) return 1;
  /* Everyone starts with a connection and a session in hand. */
  double start = now_s() + 1.0 + (double)nclaimers * 0.02, deadline = start + (double)seconds;
  pid_t *pids = calloc((size_t)nclaimers, sizeof *pids);
  for (long k = 0; k < nclaimers; k++) {
    pids[k] = fork();
    if (pids[k] == 0) {
      close(fds[0]);
      while (now_s() < start) usleep(1000);
      _exit(claimer(url, (size_t)batch, deadline, fds[1]));
    }
  }
  close(fds[1]);
  long done = 0, lost = 0, failed = 0;
  FILE *in = fdopen(fds[0], "r");
  long d, l;
  while (fscanf(in, "%ld %ld", &d, &l) == 2) done += d, lost += l;
  fclose(in);
  for (long k = 0; k < nclaimers; k++) {
    int status;
    while (waitpid(pids[k], &status, 0) < 0 && errno == EINTR) {
    }
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  free(pids);
  qs = NULL;
  nq = 0;
  long backlog = -1;
  if (jobq_stats(db, &qs, &nq) == JOBQ_OK)
    for (size_t i = 0; i < nq; i++)
      if (strcmp(qs[i].name, "c") == 0) backlog = (long)(qs[i].ready + qs[i].running);
  jobq_stats_free(qs, nq);
  jobq_close(db);
  printf("claimers %ld, batch %ld, %ld ready: %ld jobs claimed and completed in %ld s = "
         "%.0f jobs/s (refused completions %ld, failed claimers %ld, backlog after %ld)\n",
         nclaimers, batch, ready, done, seconds, (double)done / (double)seconds, lost,
         failed, backlog);
  return lost || failed || backlog != ready ? 1 : 0;
}
