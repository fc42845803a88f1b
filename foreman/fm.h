/*
 * fm.h - what the foreman's files share, and nothing else includes.
 *
 * The foreman is one libuv loop on the main thread and one database
 * thread per connection, a lane (--connections: lane 0, and more when
 * it pays).  The loop owns every process, pipe, signal and timer and all
 * the state below; each database thread owns its jobq handle and its
 * view of the one session and does nothing but run the operations the
 * loop hands it (dbthread.c).  A job travels: claimed on a lane
 * (dbthread.c) -> waiting for a slot (foreman.c) ->
 * running as a child (child.c) or on a persistent worker (persist.c) ->
 * finished with an outcome -> acknowledged in a batch on its lane
 * (acker.c).  Every
 * process the foreman starts is its own process group and is registered
 * with the guard (guard.c), which kills the groups if the foreman dies.
 */
#ifndef JOBQ_FM_H
#define JOBQ_FM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "foreman.h"
#include "jobq.h"

struct fm;

/* ---------------------------------------------------------------- util.c */

/* A monotonic clock in milliseconds. */
int64_t fm_now_ms(void);
/* ms scaled by a random factor in [1 - pct/100, 1 + pct/100]. */
int64_t fm_jitter(int64_t ms, int pct);
/* The priorities of log lines, as syslog and journald number them. */
enum { FM_ERR = 3, FM_WARNING = 4, FM_NOTICE = 5, FM_INFO = 6 };
/* Set before anything is logged: whether text lines start with the time
 * (UTC, milliseconds) and the pid (--log-times); whether every line is
 * one JSON object instead (--log-format json).  When stderr is the
 * journal (JOURNAL_STREAM names it), lines start with their priority
 * ("<4>") and text lines leave the time to the journal. */
void fm_log_setup(int times, int json);
/* Logs a line of priority prio about event ("claim_failed", a word for
 * machines) on stderr, in one write: "jobq work: MESSAGE", or
 * {"time":...,"level":...,"event":...,"message":...}. */
void fm_logp(int prio, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* fm_logp(FM_INFO, "log", ...). */
void fm_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A finished job's line: its id, queue, attempt, how long it ran, its
 * outcome ("done", "failed" ...) and its error text (may be NULL; not
 * NUL-terminated). */
struct fm_log_job {
  int64_t id;
  const char *queue;
  int attempt, max_attempts;
  int64_t duration_ms;
  const char *outcome;
  const char *error;
  size_t error_len;
};
void fm_log_job(const struct fm_log_job *j);
/* errno's text in lower case, as messages have it ("permission denied"). */
const char *fm_strerror(int err);
#define FM_DUR_BUF 32
/* "250ms", "1.5s", "2m30s": a duration for messages. */
const char *fm_fmt_ms(char *buf, int64_t ms);
#define FM_SIG_BUF 16
/* "SIGTERM" (or "signal 42"). */
const char *fm_signame(char *buf, int sig);
/* malloc, realloc and strdup that stop the program with a message when
 * memory runs out. */
void *fm_xmalloc(size_t n);
void *fm_xrealloc(void *p, size_t n);
char *fm_xstrdup(const char *s);
/* Text for a message: at most 64 bytes of data, control characters and
 * bytes over 0x7e shown as \xHH.  buf needs FM_QUOTE_BUF bytes. */
#define FM_QUOTE_BUF 300
const char *fm_quote(char *buf, const void *data, size_t len);
/*
 * A named place where JOBQ_FAILPOINT may stop or slow the foreman, so
 * that a test can kill it at an exact point: the library's grammar
 * (lib/failpoint.c), "NAME=ACTION[,NAME=ACTION...]", with the actions
 * kill (SIGKILL, as a crash would) and sleep:MS.  The foreman's places:
 *
 *   job.payload   (one process per job) half of a job's payload put
 *                 where its stdin will read it, the command not started
 *   job.spawned   a job's process started, before anything else is done
 *                 for it
 */
void fm_failpoint(const char *name);

/* ---------------------------------------------------------------- capture.c */

/* The first max bytes of a stream (a job's stdout); over is set when more
 * came. */
struct fm_capture {
  char *data;
  size_t len, cap, max;
  int over;
};
void fm_capture_init(struct fm_capture *c, size_t max);
void fm_capture_add(struct fm_capture *c, const char *p, size_t n);
/* Hands the bytes to the caller (free()); the capture is empty after. */
char *fm_capture_take(struct fm_capture *c, size_t *len);
void fm_capture_release(struct fm_capture *c);

/* The last FM_TAIL_MAX bytes of a stream (a job's stderr). */
#define FM_TAIL_MAX 4096
struct fm_tail {
  char data[FM_TAIL_MAX];
  size_t end;       /* where the next byte goes */
  uint64_t total;   /* bytes ever added */
};
void fm_tail_add(struct fm_tail *t, const char *p, size_t n);
void fm_tail_clear(struct fm_tail *t);
/*
 * An error text: "WHAT" alone, or "WHAT: TAIL" with the tail's bytes
 * (trailing white space dropped, "..." in front when earlier bytes were
 * lost).  Returns a new string (free()) and its length in *len.
 */
char *fm_error_text(const char *what, const struct fm_tail *tail, size_t *len);

/* ---------------------------------------------------------------- env.c */

/* The environment every job and worker starts from: the foreman's own,
 * without anything that names or opens the queue database. */
struct fm_env {
  char **vars;
  size_t n;
};
void fm_env_init(struct fm_env *e, char **environ_, const char *url);
void fm_env_release(struct fm_env *e);
/* Sets NAME=value in the base (replacing NAME if it is there). */
void fm_env_set(struct fm_env *e, const char *name, const char *value);
/* An environment for execve: vars is NULL-terminated; the base's strings
 * are borrowed, owned[] are this one's own. */
struct fm_envp {
  char **vars;
  char *owned[8];
  size_t nowned;
};
/* The environment of one job: the base plus JOBQ_JOB_ID, JOBQ_QUEUE,
 * JOBQ_ATTEMPT, JOBQ_MAX_ATTEMPTS, JOBQ_CLAIM, JOBQ_KEY (when the job has
 * one) and JOBQ_PREV_LOST=1 (when its previous attempt was lost).  Release
 * with fm_envp_release(); the base must outlive it. */
void fm_env_job(const struct fm_env *e, const jobq_job *job,
                struct fm_envp *out);
/* The environment of persistent worker number index (1-based): the base
 * plus JOBQ_WORKER and JOBQ_PROTOCOL. */
void fm_env_worker(const struct fm_env *e, int index, struct fm_envp *out);
void fm_envp_release(struct fm_envp *p);
/* Whether the variable NAME=VALUE would let a job reach the queue database
 * at url, given the foreman's environment environ_ (which may hold its
 * password in PGPASSWORD or MYSQL_PWD; may be NULL).  Exposed for the
 * tests. */
int fm_env_is_secret(const char *var, const char *url, char **environ_);

/* ---------------------------------------------------------------- proto.c */

#define FM_PROTOCOL_VERSION 1

/* The line that hands job to a persistent worker, "job ...\n".  Returns a
 * new buffer (free()) of *len bytes. */
char *fm_proto_job(const jobq_job *job, size_t *len);

/* Whether the line (without its newline) is the worker's "ready". */
int fm_proto_ready(const char *line, size_t len);

enum fm_reply_kind { FM_REPLY_DONE = 1, FM_REPLY_FAIL, FM_REPLY_RETRY };
struct fm_reply {
  enum fm_reply_kind kind;
  int64_t id;
  char *data;          /* result, error or reason (free()); NULL when none */
  size_t len;
  int64_t delay_ms;    /* retry: -1 for the job's backoff */
};
/*
 * Parses one reply line (without its newline).  Returns 0 with *r filled,
 * or -1 with why (whysize bytes) saying what is wrong.  A result, error
 * or reason longer than max_data bytes is refused.
 */
int fm_proto_reply(const char *line, size_t len, size_t max_data,
                   struct fm_reply *r, char *why, size_t whysize);
/* The longest reply line that can carry max_data bytes. */
size_t fm_proto_max_line(size_t max_data);

/* ---------------------------------------------------------------- jobs */

/* Why the foreman is stopping a running job; it decides the outcome. */
enum fm_kill {
  FM_KILL_NONE = 0,
  FM_KILL_TIMEOUT,   /* ran too long: failed */
  FM_KILL_CANCEL,    /* an operator cancelled it: ends cancelled */
  FM_KILL_STOP,      /* the foreman is stopping: released */
  FM_KILL_LOST,      /* the session is gone: nothing is recorded */
  FM_KILL_CUT,       /* no heartbeat for a lease: recorded as a retry,
                        should the session turn out alive */
  FM_KILL_PROTOCOL   /* its worker broke the protocol: failed */
};

struct fm_job {
  jobq_job job;            /* the foreman's own copy (fm_job_free) */
  uint64_t gen;            /* the session it was claimed under */
  int lane;                /* ... on this lane, which acknowledges it */
  int64_t timeout_ms;      /* this run's limit, 0: none */
  int64_t claimed_ms, started_ms;
  uint64_t started_ns;     /* uv_hrtime() at the start: the EWMA's clock */
  int held;                /* claimed as a prefetch: its start is to be
                              told (jobq_session_started) */
  enum fm_kill kill;       /* set once the foreman stops it */
  char *kill_note;         /* more about why (protocol errors) */
  struct fm_job *prev, *next;
  void *runner;            /* its child or worker while running */
};

struct fm_list {
  struct fm_job *head, *tail;
  size_t n;
};
void fm_list_push(struct fm_list *l, struct fm_job *j);
void fm_list_remove(struct fm_list *l, struct fm_job *j);
struct fm_job *fm_list_pop(struct fm_list *l);

/* What a finished run leaves to record. */
struct fm_outcome {
  jobq_ack_kind kind;      /* 0: nothing (the session is gone) */
  char *data;              /* result or error text, owned (free()) */
  size_t len;
  int64_t retry_in_ms;     /* FAIL and RETRY: -1 for the job's backoff */
  const char *word;        /* for logs: "done", "failed", "timed out", ... */
};

/* Called by the runners when a job's run is over; takes out->data. */
void fm_job_finished(struct fm *fm, struct fm_job *job,
                     struct fm_outcome *out);
/* The job's outcome when it was killed on purpose (job->kill set), with
 * the stderr tail; 0 kind when nothing is to be recorded. */
void fm_killed_outcome(struct fm *fm, const struct fm_job *job,
                       const struct fm_tail *err, const char *how,
                       struct fm_outcome *out);

/* ---------------------------------------------------------------- dbthread.c */

#define FM_STALE 1   /* op->rc: the op's session was given up; not run */

enum fm_op_kind {
  FM_OP_CONNECT = 1,  /* (re)open the handle and a new session (lane 0) */
  FM_OP_JOIN,         /* open the lane's handle and join the session */
  FM_OP_LEAVE,        /* close the lane's view of the session (and,
                         with reopen, its handle) */
  FM_OP_CLAIM,
  FM_OP_ACK,
  FM_OP_HEARTBEAT,
  FM_OP_STATS
};

struct fm_op {
  enum fm_op_kind kind;
  int lane;                    /* the database thread that runs it */
  uint64_t gen;                /* the session generation it belongs to */
  int64_t submitted_ms;
  /* When the database thread began to run it: a session's lease is
   * counted from here (the database's "now" in its statements is later),
   * so an op that queued behind a slow one does not shorten it. */
  int64_t began_ms;
  /* Runs on the loop thread when the op is over; frees the op. */
  void (*done)(struct fm *fm, struct fm_op *op);
  struct fm_op *next;
  int rc;                      /* JOBQ_OK, a jobq error or FM_STALE */
  char errmsg[512];
  /* CONNECT */
  int reopen;                  /* in: open a new handle first (LEAVE:
                                  close the handle) */
  int watch_fd;                /* out: a descriptor the loop owns, or -1 */
  int watch_rc;                /* out: why there is none */
  char watch_msg[512];          /* why there is no watch, or wake-ups are lost */
  char session_id[64];
  jobq_session *session;       /* CONNECT out, JOIN in: lane 0's session,
                                  which the loop only hands on */
  jobq_identity ident;         /* out: the database's identity */
  char state_err[320];         /* out (also HEARTBEAT): the state file
                                  could not be read or written */
  /* CLAIM */
  size_t max;
  size_t start_now;            /* how many start at once (the rest are held) */
  int drain;                   /* call jobq_changed() first */
  int if_changed;              /* and claim only if it says so */
  int may_look;                /* not the poll's: where every commit wakes,
                                  claim only if a job is due (dbthread.c) */
  int skipped;                 /* out: it said no: nothing was claimed */
  int watch_lost;              /* out: it said wake-ups are not coming
                                  (watch_msg: why) */
  int watch_changed;           /* out (HEARTBEAT with drain): jobq_changed()
                                  said 1 */
  int look_due;                /* when it finds nothing, jobq_next_due() */
  int64_t due_in_ms;           /* out: what that said (0 when it failed) */
  jobq_job *jobs;
  size_t njobs;
  /* ACK */
  jobq_ack *acks;
  size_t nacks;
  /* every op of a session: held-back jobs the loop has started since
   * the last op (jobq_session_started) */
  int64_t *started;
  size_t nstarted;
  /* HEARTBEAT */
  int64_t in_flight;
  int64_t reaped;              /* out: sessions the heartbeat ended */
  int64_t peers;               /* out: live sessions, its own among them */
  int64_t *cancel;
  size_t ncancel;
  int state_due;               /* in (HEARTBEAT, CONNECT): write state to
                                  the state file */
  struct fm_state_db state;
  /* and, unless --no-cron, what jobq_cron_run() did */
  int cron_rc;
  char cron_msg[512];
  jobq_cron_slot *cron;
  size_t ncron;
  /* STATS */
  jobq_queue_stats *stats;
  size_t nstats;
};

struct fm_db {
  pthread_t thread;
  int lane;
  int started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uv_async_t async;
  struct fm_op *todo, *todo_tail;   /* under mu */
  struct fm_op *done, *done_tail;   /* under mu */
  int quit;                         /* under mu */
  atomic_uint_fast64_t gen;         /* the loop's current generation */
  const struct fm_config *cfg;
  /* The database thread's alone once started: its handle, and the
   * session (lane 0) or its view of it (jobq_session_join). */
  jobq *db;
  jobq_session *s;
  int look_first;     /* its wake-ups do not name their queue (SQLite:
                         every commit wakes): a claim but the poll's
                         looks for a job due first (jobq_next_due), a
                         read */
  int look_next;      /* the last woken claim found nothing (another
                         foreman's part, or another took the job): the
                         next woken one looks first too */
};

/* The loop's view of a lane. */
enum fm_lane_state { FM_LANE_NONE = 0, FM_LANE_JOINING, FM_LANE_JOINED, FM_LANE_LEAVING };
struct fm_lane {
  enum fm_lane_state state;    /* lane 0 is joined while connected */
  int claim_out;               /* a CLAIM op is with its thread */
  int beat_out;                /* a HEARTBEAT op (lanes past 0) */
  int64_t used_ms;             /* when it was last given a claim or outcomes */
  int64_t retry_ms;            /* after a failed join: the next backoff */
  int64_t next_try_ms;         /* no join before */
  int64_t *started;            /* held-back jobs of its claims started, for
                                  its next op (the lane that holds a job
                                  writes to its row) */
  size_t nstarted, capstarted;
};

struct fm_op *fm_op_new(enum fm_op_kind kind, uint64_t gen,
                        void (*done)(struct fm *, struct fm_op *));
/* Frees the op and whatever results it still holds. */
void fm_op_free(struct fm_op *op);
/* Starts lane's database thread; 0 or a negative errno. */
int fm_db_start(struct fm *fm, int lane);
/* Hands op to its lane's database thread; urgent ones go first
 * (heartbeats). */
void fm_db_submit(struct fm *fm, struct fm_op *op, int urgent);
/* Hands an ACK op and a CLAIM op of one lane to its database thread
 * together, so that they run as one transaction (jobq_ack_claim). */
void fm_db_submit_pair(struct fm *fm, struct fm_op *ack, struct fm_op *claim);
/* Tells the session, with the next op of job's lane, that the loop has
 * started the held-back job. */
void fm_db_note_started(struct fm *fm, const struct fm_job *job);
/* Tells the database threads that ops of older generations are stale. */
void fm_db_set_gen(struct fm *fm, uint64_t gen);
/* Closes the views of the session, then the session (releasing what it
 * holds), the handles, and ends the threads.  Blocks until it has. */
void fm_db_stop(struct fm *fm);
/* Writes what the foreman saw (st) to its state file: 0, or -1 with why.
 * Blocks on the file's lock and disk: for the database thread, or once
 * the loop is over. */
int fm_db_write_state(const struct fm_config *cfg, const struct fm_state_db *st, char *why,
                      size_t size);

/* ---------------------------------------------------------------- acker.c */

struct fm_pending {
  jobq_ack ack;
  char *data;                  /* owned; ack.data points here */
  uint64_t gen;
  int64_t job_id;
  char queue[JOBQ_QUEUE_MAX + 1];  /* for its receipt */
  int64_t claimed_at_ms;
};

/* A lane's outcomes (each job is acknowledged on the lane that claimed
 * it: its view of the session holds it). */
struct fm_acker {
  uv_timer_t timer;
  struct fm *fm;
  int lane;
  struct fm_pending *items;
  size_t n, cap;
  int inflight;                /* an ACK op is with the database thread */
  size_t sent;                 /* the first sent items are that op's */
  int timer_on;
  int64_t retry_ms;            /* after a failed batch; 0: none failed */
};
void fm_acker_init(struct fm *fm);
/* Queues the outcome of job for the next batch of its lane; takes
 * out->data. */
void fm_acker_add(struct fm *fm, const struct fm_job *job,
                  struct fm_outcome *out);
/* Sends what is queued now instead of after the delay, with a claim in
 * the same transaction when the foreman wants jobs (fm_claim_op): every
 * lane's. */
void fm_acker_flush(struct fm *fm);
/* Outcomes queued or with the database threads. */
size_t fm_acker_pending(const struct fm *fm);
/* Drops the queued acks of sessions older than gen (never acknowledged
 * under a session that was given up).  Returns how many. */
size_t fm_acker_drop(struct fm *fm, uint64_t gen);
/* Whether acks are queued or with the database thread. */
int fm_acker_busy(const struct fm *fm);
/* Notes the receipt of a completion the database acknowledged, for the
 * state file (foreman.c). */
void fm_receipt_add(struct fm *fm, const struct fm_pending *p);
void fm_acker_close(struct fm *fm);

/* ---------------------------------------------------------------- guard.c */

struct fm_guard {
  uv_process_t proc;
  uv_pipe_t in;
  int up;                      /* running, and in is open */
  int closing;
  int64_t *pids;               /* the groups it knows */
  size_t n, cap;
};
void fm_guard_start(struct fm *fm);
/* The process group pid runs a job (or a worker) / no longer does. */
void fm_guard_watch(struct fm *fm, int pid);
void fm_guard_forget(struct fm *fm, int pid);
void fm_guard_close(struct fm *fm);

/* ---------------------------------------------------------------- cgroup.c */

struct fm_cgroup;
struct fm_cgroups;
/* Finds the foreman's cgroup and makes in it the directory of its jobs'
 * cgroups; when it cannot, logs why, and jobs run without (fm->cgroups
 * stays NULL). */
void fm_cgroup_init(struct fm *fm);
/* The directory of the jobs' cgroups (for the guard), or NULL. */
const char *fm_cgroup_root(const struct fm *fm);
/* An empty cgroup for a job or worker, or NULL (no cgroups, or none could
 * be made); give it back with fm_cgroup_put once the job's process has
 * exited: whatever is left in it is killed. */
struct fm_cgroup *fm_cgroup_get(struct fm *fm);
void fm_cgroup_put(struct fm *fm, struct fm_cgroup *c);
/* Its directory. */
const char *fm_cgroup_dir(const struct fm_cgroup *c);
/* The exec helper's option before a job's cgroup: "-g" (start the job
 * there), or "-m" (move it there) where fm_cgroup_init found that the
 * kernel refuses the start. */
const char *fm_cgroup_flag(const struct fm *fm);
/* Sends sig to the process group pgid and to every other process of the
 * cgroup c (when not NULL): SIGKILL through cgroup.kill. */
void fm_signal_job(struct fm_cgroup *c, int pgid, int sig);
/* Kills what is left in the jobs' cgroups, waits (up to 2s) for them to
 * empty and removes them. */
void fm_cgroup_close(struct fm *fm);
/* The guard's: kills every process under root, waits (up to 2s) for them
 * to go and removes root and the cgroups in it. */
void fm_cgroup_kill_tree(const char *root);

/* ---------------------------------------------------------------- child.c */

/* What jobs and workers are spawned as (the exec helper and its
 * arguments; see child.c); 0, or -1 after a message when jobs cannot run
 * as configured (--user without the helper). */
int fm_exec_init(struct fm *fm);
void fm_exec_release(struct fm *fm);
/* Spawns the command (through the exec helper) in a new session and the
 * cgroup cg (when not NULL), with the environment env, in_fd as its stdin
 * (or, when in_fd is -1, the new pipe in) and two new pipes on its stdout
 * and stderr (initialised by the caller); what uv_spawn returns.  in_fd
 * stays the caller's to close. */
int fm_spawn(struct fm *fm, uv_process_t *proc, struct fm_cgroup *cg, int in_fd,
             uv_pipe_t *in, uv_pipe_t *out, uv_pipe_t *err, char **env,
             uv_exit_cb on_exit_cb);

/* Runs job as a new process (one per job); 0, or a negative libuv error
 * after a message (the job was not started). */
int fm_child_start(struct fm *fm, struct fm_job *job);
/* Stops a running job's process group: SIGTERM, then SIGKILL after the
 * kill delay, or SIGKILL at once when hard. */
void fm_child_kill(struct fm *fm, struct fm_job *job, enum fm_kill why,
                   int hard);

/* ---------------------------------------------------------------- persist.c */

struct fm_workers;
/* Starts cfg->concurrency workers; 0 or a negative libuv error. */
int fm_workers_init(struct fm *fm);
/* Workers that are up (idle or busy), and idle ones. */
int fm_workers_up(const struct fm *fm);
int fm_workers_idle(const struct fm *fm);
/* Hands job to an idle worker; 0, or a negative libuv error. */
int fm_workers_start(struct fm *fm, struct fm_job *job);
void fm_workers_kill(struct fm *fm, struct fm_job *job, enum fm_kill why,
                     int hard);
/* No more jobs: every worker's stdin is closed; none is restarted. */
void fm_workers_stop(struct fm *fm);
/* Stops every worker still running (a busy one's job is released):
 * SIGTERM then SIGKILL after the kill delay, or SIGKILL when hard. */
void fm_workers_terminate(struct fm *fm, int hard);
/* Workers whose process or handles are not gone yet. */
int fm_workers_alive(const struct fm *fm);
/* Closes the restart timers; fm_workers_free() once the loop is done. */
void fm_workers_close(struct fm *fm);
void fm_workers_free(struct fm *fm);

/* ---------------------------------------------------------------- foreman.c */

struct fm_watch;

struct fm {
  const struct fm_config *cfg;
  uv_loop_t *loop;
  struct fm_db db[FM_CONN_MAX];    /* a thread per lane */
  struct fm_lane lanes[FM_CONN_MAX];
  struct fm_acker acker[FM_CONN_MAX];
  jobq_session *root;              /* lane 0's session, for the joins */
  int leaving;                     /* lanes whose view is being closed: the
                                      next session waits for them */
  int64_t claiming;                /* jobs asked for by the claims out */
  struct fm_guard guard;
  struct fm_env env;
  struct fm_workers *workers;      /* persistent mode */
  const char *exec_file;           /* what is spawned: the helper, or the
                                      command's file without it */
  char **exec_argv;                /* jobq-exec [-u USER] PPID FILE COMMAND
                                      ARGS..., or COMMAND ARGS... without it */
  size_t exec_argc;
  int exec_helper;
  struct fm_cgroups *cgroups;      /* NULL: jobs run without cgroups */
  struct fm_watch *watch;

  uint64_t gen;                    /* the current session's generation */
  int connected;                   /* a session is open */
  int suspended;                   /* ... but no heartbeat succeeded for a
                                      lease: no jobs start, outcomes wait */
  int grace_over;                  /* stopping, and the grace has run out */
  int connecting;                  /* a CONNECT op is out */
  int ever_connected;
  int reopen_next;                 /* the next CONNECT opens a new handle */
  int64_t reconnect_ms;            /* the next backoff */
  int64_t beat_ok_ms;              /* when the last good heartbeat began */
  int beat_out, stats_out;
  int beat_failing;
  char cron_error[512];        /* the last failure of a cron run, logged once */
  int maybe_work;                  /* a claim may find jobs */
  int woken_only;                  /* ... for no reason but the watch */
  int own_work;                    /* a heartbeat of ours made jobs ready since
                                      the last claim (a reap, a schedule's put) */
  int watch_down;                  /* wake-ups are not coming (logged) */
  int prefetch;                    /* the current prefetch (adapts) */
  double job_ms;                   /* how long jobs run, on average (EWMA,
                                      to the microsecond) */
  int starved;                     /* a slot was idle for want of a
                                      claimed job since the last claim */
  int64_t poll_ms;                 /* the current fallback poll interval */
  int64_t poll_cap_ms;             /* its longest: --poll, or the fleet's share */
  int polled;                      /* the poll timer asks for the next claim */
  int idle;                        /* the poll timer sleeps until a job is
                                      due, or IDLE_POLLS polls */
  int64_t hold_until_ms;           /* no claims before (spawn failures) */
  char last_claim_err[512];

  struct fm_list waiting;          /* claimed, not started */
  struct fm_list running;          /* started, not finished */

  int stopping;                    /* 0, 1 graceful, 2 fast */
  int status;                      /* the exit status */
  int closed;                      /* handles are being closed */
  int64_t started_ms;
  /* What this foreman saw of its database, for the state file: its
   * identity and the receipts of its last completions (a ring of
   * FM_STATE_RECEIPTS, seen.n of them used, the next one at
   * receipt_next); seen_dirty when the file does not have them yet. */
  struct fm_state_db seen;
  size_t receipt_next;
  int seen_dirty;
  char state_err[320];             /* the last state file error logged */
  int64_t done, failed, retried, released, lost, timeouts, cancelled;
  int64_t claims, empty_claims;    /* claims made, and those that found nothing */

  uv_timer_t beat_timer, lease_timer, poll_timer, reconnect_timer;
  uv_timer_t grace_timer, hold_timer;
  uv_signal_t sig_term, sig_int, sig_hup;
  uv_timer_t *notify_timer;        /* systemd's watchdog and status (notify.c) */
};

/* ---------------------------------------------------------------- notify.c */

/* systemd: nothing unless NOTIFY_SOCKET is set.  start: arms a timer on
 * the event loop that sends WATCHDOG=1 (when WatchdogSec is set) and
 * STATUS= with what the foreman is doing; ready: READY=1 once a session
 * is open; stopping: STOPPING=1; close: closes the timer. */
void fm_notify_start(struct fm *fm);
void fm_notify_ready(struct fm *fm, const char *session_id);
void fm_notify_stopping(struct fm *fm);
void fm_notify_close(struct fm *fm);

/* Gives up the session, which the database says is gone: its running
 * jobs are killed and nothing of it is acknowledged any more; a new
 * session is opened.  why is for the log. */
void fm_session_lost(struct fm *fm, const char *why);
/* When op, back from the database thread, found the session gone
 * (JOBQ_EEXPIRED): frees op, gives the session up with its message, and
 * returns 1; 0 otherwise, op untouched. */
int fm_op_expired(struct fm *fm, struct fm_op *op);
/* 1 when no heartbeat has succeeded for a lease (on this host's monotonic
 * clock, from when the last good one was sent): the session may be gone,
 * and the foreman suspends it (foreman.c). */
int fm_lease_out(const struct fm *fm);
/* Tries to start waiting jobs and to claim more, as the state allows. */
void fm_kick(struct fm *fm);
/* The prefetch after a claim: halved when the claim came back short (the
 * queue ran dry), doubled when a slot went idle waiting for it (starved),
 * never more than the slots get through in about 50 ms at job_ms a job
 * (the average run time), and within [min, max]. */
int fm_prefetch_next(int prefetch, int short_batch, int starved, int concurrency,
                     double job_ms, int min, int max);
/* A CLAIM op for as many jobs as the slots and the prefetch have room
 * for, or NULL when no claim is due (nothing suggests work, no room, the
 * lane has one out).  Alone (lane -1) a claim also waits until the
 * held-back jobs run down to half, and goes on a lane with nothing at
 * its database thread (opening one more, up to --connections, when none
 * is); along with an acknowledgement of lane it does not, since it costs
 * no commit of its own.  The caller submits it. */
struct fm_op *fm_claim_op(struct fm *fm, int lane);
/* Whether the foreman is finished: stopping, nothing running, nothing to
 * acknowledge; then closes the session and ends the loop. */
void fm_maybe_finish(struct fm *fm);

#endif
