/*
 * foreman.h - the foreman behind `jobq work`, as the jobq command sees it:
 * a configuration and two entry points.  The foreman holds one session on
 * a queue database and runs the jobs it claims as local processes, one
 * process per job or fed to long-lived workers over a line protocol
 * (docs/worker-protocol.md).  How it does that is in foreman/fm.h and the
 * files beside it; this header is all that cli/cmd_work.c needs.
 */
#ifndef JOBQ_FOREMAN_H
#define JOBQ_FOREMAN_H

#include <stddef.h>
#include <stdint.h>

/* What `jobq work` was asked to do; checked by the command before
 * fm_run() sees it.  The strings are borrowed for the whole run. */
struct fm_config {
  const char *url;             /* the queue database */
  const char *const *queues;   /* the queues to claim from; nq 0: all */
  size_t nq;
  const char *name;            /* the session's name in `jobq sessions` */
  int concurrency;             /* jobs (or persistent workers) at once */
  int batch;                   /* most jobs per claim */
  int prefetch;                /* claimed jobs kept waiting for a slot: */
  int prefetch_max;            /* from prefetch, doubling up to this while
                                  short jobs leave slots idle */
  int64_t lease_ms;            /* the session's lease */
  int64_t timeout_ms;          /* longest run of a job (0: none) */
  int64_t grace_ms;            /* how long running jobs may finish on stop */
  int64_t kill_after_ms;       /* from SIGTERM to SIGKILL */
  int64_t poll_ms;             /* the longest wait between claims when idle */
  int64_t ack_delay_ms;        /* how long an ack may wait for company */
  size_t max_output;           /* the largest result (stdout) of a job */
  size_t max_payload;          /* for the handle: at least max_output */
  int persistent;              /* feed long-lived workers */
  int until_empty;             /* stop once the queues have nothing left */
  int verbose;                 /* one line per finished job */
  int log_times;               /* each log line starts with the time and
                                  the pid */
  int log_json;                /* each log line is one JSON object */
  int no_cron;                 /* do not put the jobs of schedules due */
  char *const *argv;           /* COMMAND ARGS..., NULL-terminated */
  const char *file;            /* COMMAND as found in PATH (or as given
                                  when it has a '/') */
};

/*
 * Runs the foreman until a signal stops it (or, with until_empty, until
 * its queues are empty).  Logs one line per event on stderr.  Returns the
 * exit status: 0 after a graceful stop, 1 when it could not start (the
 * database refused it), 2 when the database URL or its contents are not
 * usable as given.
 */
int fm_run(const struct fm_config *cfg);

/*
 * The guard: a small process the foreman starts from its own binary
 * (`jobq work --internal-guard`), told over its stdin which process groups
 * run jobs.  When the foreman dies, even by SIGKILL, the guard reads end of
 * file and kills those groups.  Returns the exit status.
 */
int fm_guard_main(void);

#endif
