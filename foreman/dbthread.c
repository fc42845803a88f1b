/*
 * dbthread.c - the foreman's database threads, one per connection (a
 * lane).
 *
 * Every call into libjobq blocks: a claim or an acknowledgement waits for
 * a disk flush, and a locked SQLite file or a slow server can hold a call
 * for seconds (busy_timeout is 10 s by default).  If those calls ran on
 * the loop thread, a slow database would also stop the foreman from
 * reaping children, enforcing timeouts, answering signals and noticing
 * that its lease ran out.  So each jobq handle and its session live on a
 * dedicated thread, which owns them for their whole life (a handle belongs
 * to one thread at a time, include/jobq.h), and the loop hands it
 * operations: connect, claim, ack, heartbeat, stats.  They run one at a
 * time in order, heartbeats first (an ack followed by a claim run as one
 * transaction); each comes back through a uv_async to the loop thread,
 * which calls its done function.  The threads share with the loop
 * only their op lists (under a mutex each) and the current session
 * generation (an atomic): when the loop gives up a session, the ops still
 * queued for it are not run, so nothing is ever acknowledged under a
 * session the loop has written off.
 *
 * Lane 0 opens the session and its wake-ups, heartbeats, puts the jobs of
 * schedules and reads the counts.  A busy foreman opens more lanes, up to
 * --connections: each joins the session on a connection of its own
 * (jobq_session_join) and claims and acknowledges its own jobs, so that
 * the database works on several transactions of the foreman at once.  A
 * lane's view of the session goes before lane 0's session does (the
 * loop closes them first, foreman.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fm.h"

struct fm_op *fm_op_new(enum fm_op_kind kind, uint64_t gen,
                        void (*done)(struct fm *, struct fm_op *)) {
  struct fm_op *op = fm_xmalloc(sizeof *op);
  memset(op, 0, sizeof *op);
  op->kind = kind;
  op->gen = gen;
  op->done = done;
  op->watch_fd = -1;
  op->submitted_ms = fm_now_ms();
  return op;
}

void fm_op_free(struct fm_op *op) {
  if (op == NULL) return;
  jobq_jobs_free(op->jobs, op->njobs);
  free(op->acks);
  free(op->cancel);
  jobq_cron_slots_free(op->cron, op->ncron);
  free(op->started);
  jobq_stats_free(op->stats, op->nstats);
  fm_state_db_release(&op->state);
  if (op->watch_fd >= 0) close(op->watch_fd);
  free(op);
}

/* ---------------------------------------------------------------- the thread */

static void keep_error(struct fm_op *op, jobq *db, int rc) {
  op->rc = rc;
  const char *msg = db != NULL ? jobq_errmsg(db) : "out of memory";
  snprintf(op->errmsg, sizeof op->errmsg, "%s", msg[0] ? msg : jobq_strerror(rc));
}

/* Opens the thread's handle when it has none: 1, or 0 with op's error. */
static int open_handle(struct fm_db *d, struct fm_op *op) {
  if (d->db != NULL) return 1;
  int rc = jobq_open(d->cfg->url, &d->db);
  if (rc == JOBQ_OK && d->cfg->max_payload > 0)
    rc = jobq_set_max_payload(d->db, d->cfg->max_payload);
  if (rc == JOBQ_OK) return 1;
  keep_error(op, d->db, rc);
  jobq_close(d->db);
  d->db = NULL;
  return 0;
}

static void run_connect(struct fm_db *d, struct fm_op *op) {
  const struct fm_config *cfg = d->cfg;
  if (op->state_due) fm_db_write_state(cfg, &op->state, op->state_err, sizeof op->state_err);
  jobq_session_close(d->s); /* releases what it held, if it still exists */
  d->s = NULL;
  if (op->reopen && d->db != NULL) {
    jobq_close(d->db);
    d->db = NULL;
  }
  if (!open_handle(d, op)) return;
  int rc;
  /* What the workers before this one saw of the database: the handle
   * refuses it if it lost their writes (a restore, a stale replica). */
  rc = jobq_identity_get(d->db, &op->ident);
  if (rc != JOBQ_OK) {
    keep_error(op, d->db, rc);
    return;
  }
  if (cfg->state != NULL) {
    struct fm_state_db st;
    int got = fm_state_read(cfg->state, op->ident.queue_id, &st, op->state_err,
                            sizeof op->state_err);
    if (got == 1) {
      jobq_identity seen = op->ident;
      seen.epoch = st.epoch;
      seen.seq = st.seq;
      rc = jobq_expect(d->db, &seen, st.receipts, st.n);
      fm_state_db_release(&st);
      if (rc != JOBQ_OK) {
        keep_error(op, d->db, rc);
        return;
      }
    }
  }
  int fd;
  op->watch_rc = jobq_watch(d->db, &fd);
  /* Wake-ups for other queues are not this foreman's work, where the
   * store can tell them apart (JOBQ_ENOTSUP: it cannot, and each one
   * counts: a woken claim looks first). */
  d->look_first = op->watch_rc == JOBQ_OK &&
                  jobq_watch_queues(d->db, cfg->queues, cfg->nq) == JOBQ_ENOTSUP;
  if (op->watch_rc == JOBQ_OK) {
    /* The loop polls its own copy, so that the handle's descriptor can be
     * closed (with the handle) whatever the loop is doing. */
    op->watch_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (op->watch_fd < 0) {
      op->watch_rc = JOBQ_EDB;
      snprintf(op->watch_msg, sizeof op->watch_msg, "cannot copy a descriptor: %s",
               strerror(errno));
    }
  } else {
    snprintf(op->watch_msg, sizeof op->watch_msg, "%s", jobq_errmsg(d->db));
  }
  jobq_session_opts so;
  jobq_session_opts_init(&so);
  so.name = cfg->name;
  so.lease_ms = cfg->lease_ms;
  /* The lease starts with the session, not with the connection. */
  op->began_ms = fm_now_ms();
  rc = jobq_session_open(d->db, &so, &d->s);
  if (rc != JOBQ_OK) {
    keep_error(op, d->db, rc);
    d->s = NULL;
    return;
  }
  snprintf(op->session_id, sizeof op->session_id, "%s", jobq_session_id(d->s));
  op->session = d->s;
}

/* Opens the lane's handle when it has none, and joins lane 0's session
 * (op->session) with it.  The handle stays open when the join fails: it
 * makes its connection again by itself. */
static void run_join(struct fm_db *d, struct fm_op *op) {
  if (!open_handle(d, op)) return;
  int rc;
  jobq_session_close(d->s); /* a view left from before: none, normally */
  d->s = NULL;
  rc = jobq_session_join(d->db, op->session, &d->s);
  if (rc != JOBQ_OK) {
    keep_error(op, d->db, rc);
    d->s = NULL;
    return;
  }
  op->rc = JOBQ_OK;
}

/* jobq_changed() for a claim; when it says that wake-ups are not coming
 * (the handle opens their connection again by itself, on later calls),
 * the claim says why. */
static int drain_watch(struct fm_db *d, struct fm_op *op) {
  int changed = jobq_changed(d->db);
  if (changed < 0) {
    op->watch_lost = 1;
    snprintf(op->watch_msg, sizeof op->watch_msg, "%s", jobq_errmsg(d->db));
  }
  return changed;
}

/* Tells the session which held-back jobs the loop has started, so that
 * only jobs it never started cost no attempt if the foreman dies. */
static void note_started(struct fm_db *d, const struct fm_op *op) {
  if (d->s == NULL) return;
  for (size_t i = 0; i < op->nstarted; i++) {
    jobq_job job;
    memset(&job, 0, sizeof job);
    job.id = op->started[i];
    jobq_session_started(d->s, &job);
  }
}

/* Whether a claim would find nothing: one that only a wake-up asked
 * for (if_changed) when jobq_changed() says nothing changed (the commit
 * was the foreman's own); and, where any commit wakes, or after a woken
 * claim that found nothing, one that the poll did not ask for when a read
 * finds no job due that this session may claim (the commit was of
 * another queue, or of another session's parts, or of jobs an earlier
 * claim already took, or a full claim took the last ones), which costs
 * less than a claim (SQLite: its write lock).
 * jobq_changed() first waits for a commit still being written, so the
 * read sees it.  An error (a lost wake-up connection) may hide news:
 * then it claims. */
static int claim_skips(struct fm_db *d, struct fm_op *op) {
  if (!op->drain) return 0;
  int changed = drain_watch(d, op);
  if (changed == 0 && op->if_changed) return 1;
  return changed >= 0 && op->may_look && (d->look_first || d->look_next) &&
         jobq_session_next_due(d->s, d->cfg->queues, d->cfg->nq, &op->due_in_ms) == JOBQ_OK &&
         op->due_in_ms != 0;
}

static void run(struct fm_db *d, struct fm_op *op) {
  int rc;
  op->began_ms = fm_now_ms();
  if (op->kind == FM_OP_LEAVE) {
    jobq_session_close(d->s);
    d->s = NULL;
    if (op->reopen) {
      jobq_close(d->db);
      d->db = NULL;
    }
    op->rc = JOBQ_OK;
    return;
  }
  int of_session = op->kind != FM_OP_CONNECT && op->kind != FM_OP_STATS;
  if (of_session && op->gen != atomic_load(&d->gen)) {
    op->rc = FM_STALE;
    return;
  }
  if (op->kind == FM_OP_JOIN) {
    run_join(d, op);
    return;
  }
  if (op->kind != FM_OP_CONNECT && d->db == NULL) {
    op->rc = JOBQ_ECONN;
    snprintf(op->errmsg, sizeof op->errmsg, "the database is not open");
    return;
  }
  if (of_session && d->s == NULL) {
    op->rc = JOBQ_EEXPIRED;
    snprintf(op->errmsg, sizeof op->errmsg, "no session is open");
    return;
  }
  if (of_session) note_started(d, op);
  switch (op->kind) {
    case FM_OP_CONNECT:
      run_connect(d, op);
      return;
    case FM_OP_CLAIM:
      if (claim_skips(d, op)) {
        op->rc = JOBQ_OK;
        op->skipped = 1;
        return;
      }
      jobq_session_start_now(d->s, op->start_now);
      rc = jobq_claim(d->s, d->cfg->queues, d->cfg->nq, op->max, &op->jobs,
                      &op->njobs);
      if (op->drain && op->may_look) d->look_next = rc == JOBQ_OK && op->njobs == 0;
      /* Nothing now: when does something come due? */
      if (rc == JOBQ_OK && op->njobs == 0 && op->look_due &&
          jobq_session_next_due(d->s, d->cfg->queues, d->cfg->nq, &op->due_in_ms) != JOBQ_OK)
        op->due_in_ms = 0;
      break;
    case FM_OP_ACK:
      rc = jobq_ack_many(d->s, op->acks, op->nacks);
      break;
    case FM_OP_HEARTBEAT:
      jobq_session_set_in_flight(d->s, op->in_flight);
      rc = jobq_heartbeat(d->s, &op->cancel, &op->ncancel);
      op->reaped = rc == JOBQ_OK ? jobq_session_reaped(d->s) : 0;
      op->peers = rc == JOBQ_OK ? jobq_session_peers(d->s) : 0;
      /* An idle foreman's look at its wake-ups, which it may not claim
       * for a while: lost, or news. */
      if (op->drain) op->watch_changed = drain_watch(d, op) == 1;
      /* The receipts are true whatever the heartbeat found. */
      if (op->state_due) fm_db_write_state(d->cfg, &op->state, op->state_err,
                                           sizeof op->state_err);
      /* With the heartbeat's rhythm, the jobs of schedules due: one read
       * when none is. */
      if (rc == JOBQ_OK && !d->cfg->no_cron && d->lane == 0) {
        op->cron_rc = jobq_cron_run(d->db, &op->cron, &op->ncron, NULL);
        if (op->cron_rc != JOBQ_OK)
          snprintf(op->cron_msg, sizeof op->cron_msg, "%s", jobq_errmsg(d->db));
      }
      break;
    case FM_OP_STATS:
      rc = jobq_stats(d->db, &op->stats, &op->nstats);
      break;
    default:
      rc = JOBQ_EINVAL;
  }
  if (rc != JOBQ_OK)
    keep_error(op, d->db, rc);
  else
    op->rc = JOBQ_OK;
}

/* An acknowledgement followed by a claim of the same session: both in one
 * transaction (jobq_ack_claim), half the commits of doing them apart.
 * Either way the loop gets both ops back with their outcome. */
static void run_pair(struct fm_db *d, struct fm_op *ack, struct fm_op *claim) {
  if (ack->gen != atomic_load(&d->gen) || d->db == NULL || d->s == NULL) {
    run(d, ack);
    run(d, claim);
    return;
  }
  if (claim_skips(d, claim)) {
    claim->rc = JOBQ_OK;
    claim->skipped = 1;
    run(d, ack);
    return;
  }
  note_started(d, ack);
  note_started(d, claim);
  jobq_session_start_now(d->s, claim->start_now);
  int rc = jobq_ack_claim(d->s, ack->acks, ack->nacks, d->cfg->queues, d->cfg->nq,
                          claim->max, &claim->jobs, &claim->njobs);
  if (rc != JOBQ_OK) {
    keep_error(ack, d->db, rc);
    keep_error(claim, d->db, rc);
  } else {
    ack->rc = claim->rc = JOBQ_OK;
  }
}

static void *thread_main(void *arg) {
  struct fm_db *d = arg;
  pthread_mutex_lock(&d->mu);
  for (;;) {
    while (d->todo == NULL && !d->quit) pthread_cond_wait(&d->cv, &d->mu);
    if (d->todo == NULL) break; /* quit, and nothing left to do */
    struct fm_op *op = d->todo, *pair = NULL;
    d->todo = op->next;
    if (op->kind == FM_OP_ACK && d->todo != NULL && d->todo->kind == FM_OP_CLAIM &&
        d->todo->gen == op->gen) {
      pair = d->todo;
      d->todo = pair->next;
    }
    if (d->todo == NULL) d->todo_tail = NULL;
    pthread_mutex_unlock(&d->mu);

    if (pair != NULL)
      run_pair(d, op, pair);
    else
      run(d, op);

    /* A pair comes back claim first: the loop takes in the new jobs
     * before the acknowledgement's outcomes, which go out again at once
     * with the next claim (foreman/acker.c). */
    struct fm_op *first = op, *last = op;
    if (pair != NULL) {
      first = pair;
      pair->next = op;
    }
    last->next = NULL;
    pthread_mutex_lock(&d->mu);
    if (d->done_tail != NULL)
      d->done_tail->next = first;
    else
      d->done = first;
    d->done_tail = last;
    pthread_mutex_unlock(&d->mu);
    uv_async_send(&d->async);
    pthread_mutex_lock(&d->mu);
  }
  pthread_mutex_unlock(&d->mu);
  jobq_session_close(d->s); /* hands back whatever it still holds */
  d->s = NULL;
  jobq_close(d->db);
  d->db = NULL;
  return NULL;
}

int fm_db_write_state(const struct fm_config *cfg, const struct fm_state_db *st, char *why,
                      size_t size) {
  char *url = jobq_url_redact(cfg->url);
  int rc = fm_state_write(cfg->state, st, url, why, size);
  free(url);
  return rc;
}

/* ---------------------------------------------------------------- the loop's side */

static void on_async(uv_async_t *a) {
  struct fm *fm = a->data;
  struct fm_db *d = (struct fm_db *)((char *)a - offsetof(struct fm_db, async));
  pthread_mutex_lock(&d->mu);
  struct fm_op *list = d->done;
  d->done = d->done_tail = NULL;
  pthread_mutex_unlock(&d->mu);
  while (list != NULL) {
    struct fm_op *op = list;
    list = op->next;
    op->next = NULL;
    op->done(fm, op);
  }
}

int fm_db_start(struct fm *fm, int lane) {
  struct fm_db *d = &fm->db[lane];
  d->lane = lane;
  d->cfg = fm->cfg;
  atomic_init(&d->gen, fm->gen);
  pthread_mutex_init(&d->mu, NULL);
  pthread_cond_init(&d->cv, NULL);
  int rc = uv_async_init(fm->loop, &d->async, on_async);
  if (rc != 0) return rc;
  d->async.data = fm;
  /* The thread starts with every signal blocked: they are the loop's. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  rc = pthread_create(&d->thread, NULL, thread_main, d);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    uv_close((uv_handle_t *)&d->async, NULL);
    return -rc;
  }
  d->started = 1;
  return 0;
}

/* The starts noted since the last op of the session go with op. */
static void take_started(struct fm *fm, struct fm_op *op) {
  if ((op->kind != FM_OP_CLAIM && op->kind != FM_OP_ACK && op->kind != FM_OP_HEARTBEAT) ||
      fm->lanes[op->lane].nstarted == 0)
    return;
  struct fm_lane *l = &fm->lanes[op->lane];
  op->started = l->started;
  op->nstarted = l->nstarted;
  l->started = NULL;
  l->nstarted = l->capstarted = 0;
}

void fm_db_submit(struct fm *fm, struct fm_op *op, int urgent) {
  struct fm_db *d = &fm->db[op->lane];
  op->next = NULL;
  take_started(fm, op);
  pthread_mutex_lock(&d->mu);
  if (urgent || d->todo == NULL) {
    op->next = d->todo;
    d->todo = op;
    if (d->todo_tail == NULL) d->todo_tail = op;
  } else {
    d->todo_tail->next = op;
    d->todo_tail = op;
  }
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
}

void fm_db_submit_pair(struct fm *fm, struct fm_op *ack, struct fm_op *claim) {
  struct fm_db *d = &fm->db[ack->lane];
  take_started(fm, ack);
  /* Appended under one lock: the thread never sees the ack without the
   * claim behind it. */
  pthread_mutex_lock(&d->mu);
  ack->next = claim;
  claim->next = NULL;
  if (d->todo_tail != NULL)
    d->todo_tail->next = ack;
  else
    d->todo = ack;
  d->todo_tail = claim;
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
}

void fm_db_note_started(struct fm *fm, const struct fm_job *job) {
  struct fm_lane *l = &fm->lanes[job->lane];
  if (l->nstarted == l->capstarted) {
    l->capstarted = l->capstarted ? l->capstarted * 2 : 16;
    l->started = fm_xrealloc(l->started, l->capstarted * sizeof *l->started);
  }
  l->started[l->nstarted++] = job->job.id;
}

void fm_db_set_gen(struct fm *fm, uint64_t gen) {
  for (int i = 0; i < FM_CONN_MAX; i++)
    if (fm->db[i].started) atomic_store(&fm->db[i].gen, gen);
  /* What was started under the old session is no news to the next one. */
  for (int i = 0; i < FM_CONN_MAX; i++) fm->lanes[i].nstarted = 0;
}

static void stop_lane(struct fm_db *d) {
  if (!d->started) return;
  pthread_mutex_lock(&d->mu);
  d->quit = 1;
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
  pthread_join(d->thread, NULL);
  d->started = 0;
  /* Ops that finished after the loop stopped listening. */
  struct fm_op *list = d->done;
  d->done = d->done_tail = NULL;
  while (list != NULL) {
    struct fm_op *op = list;
    list = op->next;
    fm_op_free(op);
  }
  pthread_mutex_destroy(&d->mu);
  pthread_cond_destroy(&d->cv);
  uv_close((uv_handle_t *)&d->async, NULL);
}

void fm_db_stop(struct fm *fm) {
  /* The views first: lane 0's session must outlive them. */
  for (int i = FM_CONN_MAX - 1; i >= 0; i--) stop_lane(&fm->db[i]);
}
