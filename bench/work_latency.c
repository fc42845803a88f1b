/*
 * work_latency.c - enqueue-to-start latency of an idle `jobq work`, for
 * bench/work.sh.  Puts N jobs one at a time, INTERVAL ms apart (so the
 * foreman is idle when each arrives), each payload the time just before
 * its put (Unix ns); the jobs (work_job stamp or persistent-stamp) return
 * the time they started.  Once all are done, prints the latencies' p50,
 * p90, p99 and max in milliseconds.  The time includes the put's own
 * commit (one disk flush).
 *
 *   work_latency URL N INTERVAL_MS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jobq.h"

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(int64_t ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: work_latency URL N INTERVAL_MS\n");
    return 2;
  }
  int n = (int)strtol(argv[2], NULL, 10);
  int64_t interval = strtol(argv[3], NULL, 10);
  if (n < 1 || interval < 0) {
    fprintf(stderr, "work_latency: expected N >= 1 and INTERVAL_MS >= 0\n");
    return 2;
  }
  jobq *db;
  if (jobq_open(argv[1], &db) != JOBQ_OK) {
    fprintf(stderr, "work_latency: %s\n", jobq_errmsg(db));
    return 1;
  }
  int64_t *ids = calloc((size_t)n, sizeof *ids);
  double *lat = calloc((size_t)n, sizeof *lat);
  for (int i = 0; i < n; i++) {
    sleep_ms(interval);
    char text[32];
    snprintf(text, sizeof text, "%lld", (long long)now_ns());
    jobq_put_opts o;
    jobq_put_opts_init(&o);
    o.queue = "latency";
    o.payload = text;
    o.payload_len = strlen(text);
    if (jobq_put(db, &o, &ids[i], NULL) != JOBQ_OK) {
      fprintf(stderr, "work_latency: put: %s\n", jobq_errmsg(db));
      return 1;
    }
  }
  for (int i = 0; i < n; i++) {
    jobq_job_info *info = NULL;
    int waited = 0;
    for (;;) {
      if (jobq_show(db, ids[i], &info) != JOBQ_OK) {
        fprintf(stderr, "work_latency: show: %s\n", jobq_errmsg(db));
        return 1;
      }
      if (info->state == JOBQ_STATE_DONE) break;
      jobq_info_free(info, 1);
      if (++waited > 1000) {
        fprintf(stderr, "work_latency: job %lld not done after 10s\n",
                (long long)ids[i]);
        return 1;
      }
      sleep_ms(10);
    }
    long long put = strtoll(info->payload, NULL, 10);
    char res[32] = "";
    memcpy(res, info->result, info->result_len < 31 ? info->result_len : 31);
    long long started = strtoll(res, NULL, 10);
    lat[i] = (double)(started - put) / 1e6;
    jobq_info_free(info, 1);
  }
  qsort(lat, (size_t)n, sizeof *lat, cmp);
  printf("%d jobs, enqueue to start: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n",
         n, lat[n / 2], lat[n * 9 / 10], lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1],
         lat[n - 1]);
  free(ids);
  free(lat);
  jobq_close(db);
  return 0;
}
