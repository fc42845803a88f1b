/*
 * jobopts.h - the options that describe a job, shared by the commands
 * that make jobs: `jobq put` and `jobq cron add` (whose schedule puts a
 * job at each slot).  The option table's entries and the check that turns
 * the values given into a jobq_put_opts, with messages naming the option.
 */
#ifndef JOBQ_CLI_JOBOPTS_H
#define JOBQ_CLI_JOBOPTS_H

#include "jobq.h"
#include "options.h"

/* The option values as given; NULL (0) when not given. */
struct cli_job_args {
  const char *queue, *priority, *delay, *at, *key, *unique, *max_attempts;
  const char *timeout, *backoff;
  int barrier;
};

/* The table entries of the options of a job (a: struct cli_job_args *):
 * what it is (queue and priority), when it runs (delay, at: put only),
 * and how it runs (the rest). */
#define CLI_JOB_WHAT_OPTIONS(a)                                                   \
  CLI_STRING('q', "queue", &(a)->queue, "QUEUE", "the queue (default: default)"), \
      CLI_STRING('p', "priority", &(a)->priority, "N",                           \
                 "higher runs first, -32768 to 32767 (default 0)")
#define CLI_JOB_WHEN_OPTIONS(a)                                                   \
  CLI_STRING(0, "delay", &(a)->delay, "D", "run no earlier than D from now (30s, 5m)"), \
      CLI_STRING(0, "at", &(a)->at, "TIME",                                       \
                 "run no earlier than TIME: 2026-11-22T10:00:00Z or @UNIXSECONDS")
#define CLI_JOB_HOW_OPTIONS(a)                                                    \
  CLI_STRING(0, "key", &(a)->key, "K",                                            \
             "ordering key: jobs with one key run one at a time, in order"),      \
      CLI_FLAG(0, "barrier", &(a)->barrier,                                       \
               "run after every earlier job of the queue, before any later one"), \
      CLI_STRING(0, "unique", &(a)->unique, "U",                                  \
                 "at most one unfinished job of the queue has this key"),         \
      CLI_STRING(0, "max-attempts", &(a)->max_attempts, "N",                      \
                 "runs before the job is dead, 1 to 1000 (default 25)"),          \
      CLI_STRING(0, "timeout", &(a)->timeout, "D", "the worker stops a run after D"), \
      CLI_STRING(0, "backoff", &(a)->backoff, "D",                                \
                 "base of the retry delay, doubled per attempt, up to 1h (default 1s)")

/* An ordering or unique key: 1 to 255 bytes of UTF-8 text; 0, or 2
 * after "invalid WHAT '...': expected ...". */
int cli_check_key(const char *what, const char *key);

/* Checks every value given and fills o (from jobq_put_opts_init()); 0, or
 * 2 after a message. */
int cli_job_check(const struct cli_job_args *a, jobq_put_opts *o);

#endif
