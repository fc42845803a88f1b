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
#include <sys/types.h>

/* The user jobs run as (`--user`), looked up once (foreman/user.c). */
struct fm_user {
  char *name, *home;
  uid_t uid;
  gid_t gid;
  char *arg;                   /* "UID:GID:GID,GID,..." for jobq-exec */
};

/* Looks up the user NAME (or a numeric uid) with its groups.  Returns 0
 * with *u filled (fm_user_release), or -1 with why (whysize bytes) saying
 * what is wrong. */
int fm_user_lookup(const char *name, struct fm_user *u, char *why,
                   size_t whysize);
void fm_user_release(struct fm_user *u);

#include "jobq.h"

/* The most connections --connections may ask for. */
#define FM_CONN_MAX 8

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
  int fleet_polls;             /* without wake-ups, the polls a second of all
                                * live sessions together (0: each --poll) */
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
  int connections;             /* most database connections for claims and
                                  acknowledgements (1 to FM_CONN_MAX), all
                                  under the one session; LISTEN apart */
  char *const *argv;           /* COMMAND ARGS..., NULL-terminated */
  const char *file;            /* COMMAND as found in PATH (or as given
                                  when it has a '/') */
  const struct fm_user *user;  /* run jobs as this user (the foreman is
                                  root), or NULL: as the foreman's */
  int no_cgroups;              /* never give jobs cgroups of their own */
  const char *state;           /* the state file (fm_state_default), or
                                  NULL: none */
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
 * The state file (foreman/state.c): what a machine's workers saw of each
 * queue database, by its queue id: the epoch, the highest job id, and the
 * receipts of the last FM_STATE_RECEIPTS completions acknowledged to
 * them, newest first.  A worker started fresh hands them to jobq_expect()
 * before it opens its session, so that a database that lost them is
 * refused; `jobq doctor` lists the ones that are missing.
 */
#define FM_STATE_RECEIPTS 64
struct fm_state_db {
  char queue_id[37];
  int64_t epoch, seq;
  jobq_receipt *receipts;      /* n of them (free with fm_state_db_release) */
  size_t n;
};
/* The default state file into buf: $XDG_STATE_HOME/jobq/state.json when
 * XDG_STATE_HOME is set, else /var/lib/jobq/state.json for root, else
 * ~/.local/state/jobq/state.json.  0, or -1 when there is no home. */
int fm_state_default(char *buf, size_t size);
/* Reads what the file says of the database queue_id into *out: 1, 0 when
 * it says nothing (or there is no file), -1 with why (size bytes) when it
 * cannot be read.  Takes the file's lock shared. */
int fm_state_read(const char *path, const char *queue_id, struct fm_state_db *out, char *why,
                  size_t size);
/* Merges seen into the file (url, redacted, for people to read), under
 * its lock, replacing the file whole; receipts of an older epoch than
 * seen's go.  Nothing is written when the file already knows a newer
 * epoch.  0, or -1 with why. */
int fm_state_write(const char *path, const struct fm_state_db *seen, const char *url, char *why,
                   size_t size);
void fm_state_db_release(struct fm_state_db *s);

/*
 * The guard: a small process the foreman starts from its own binary
 * (`jobq work --internal-guard [CGROUP]`), told over its stdin which
 * process groups run jobs.  When the foreman dies, even by SIGKILL, the
 * guard reads end of file and kills those groups, and every process of
 * the jobs' cgroups under CGROUP (when not NULL).  Returns the exit
 * status.
 */
int fm_guard_main(const char *cgroup_root);

#endif
