/*
 * foreman.c - the foreman's loop and state: `jobq work` from start to
 * stop.
 *
 * It opens one session (through the database thread, dbthread.c) and then
 * reacts to events, never polling in a loop: a claim is made when there
 * is room (free slots plus a small prefetch) and reason to think there is
 * work: the database's change descriptor became readable (jobq_watch: on
 * SQLite, a write to the queue's log by another process), one of our own
 * acknowledgements committed (it may have made the next job of an
 * ordering key ready), the last claim came back full, or the fallback
 * poll timer fired (25 ms after activity, doubling up to --poll, 1 s by
 * default, with jitter: it also catches retries and delayed jobs coming
 * due, which write nothing).  While wake-ups come, an idle foreman's poll
 * that finds nothing asks when its queues' next job comes due and sleeps
 * until then, at most IDLE_POLLS polls' time (delayed jobs and retries
 * wake it when they are written, and it looks again): an idle fleet then
 * costs its heartbeats and little more.  Claimed jobs wait in a list
 * until a slot is free, then run as children (child.c) or on persistent
 * workers (persist.c); outcomes go to the acker (acker.c).
 *
 * The session is heartbeaten every lease/3 with the number of jobs in
 * flight; the heartbeat brings back cancel requests.  If no heartbeat has
 * succeeded for a whole lease (measured from when the last good one was
 * sent), the session may have been reaped, and its jobs may run
 * elsewhere: the session is suspended.  Its running jobs are stopped (to
 * be retried) and its claimed ones released, but the outcomes of the jobs
 * that finished are kept, and the foreman goes on heartbeating the same
 * session: while the database was out of reach or read-only, no one could
 * reap it.  A heartbeat that succeeds resumes it, and the outcomes are
 * recorded (fenced by their claims, as ever); only when the database says
 * the session is gone is it given up: what it had not recorded is dropped
 * (those jobs run again) and a new session is opened, with capped
 * exponential backoff and jitter while that fails.  SIGTERM, SIGINT and
 * SIGHUP stop it gracefully: no more claims, claimed jobs released at
 * once, running jobs given --grace to finish, then stopped and released;
 * a second signal stops at once.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "fm.h"

#define POLL_MIN_MS 25
/* With wake-ups, the longest idle sleep, in --poll periods: only a job
 * written by hand, which wakes no one, needs a poll then (a lost wake-up
 * connection the heartbeat notices). */
#define IDLE_POLLS 30
#define RECONNECT_MIN_MS 250
#define RECONNECT_MAX_MS 30000
#define HOLD_MS 1000           /* no claims after a job could not start */
#define LANE_IDLE_MS 30000     /* a connection past the first closes when
                                  unused for this long */

extern char **environ;

struct fm_watch {
  uv_poll_t poll;
  int fd;
  int on;
  struct fm *fm;
};

static void begin_stop(struct fm *fm, int fast, const char *why);
static int lease_check(struct fm *fm);

/* An error that trying again will not mend (jobq_err_temporary): a wrong
 * password, a missing privilege, a bad URL.  JOBQ_EDB says too little to
 * tell, and a read-only database may be one in a switchover: both are
 * tried again. */
static int permanent(int rc) {
  return !jobq_err_temporary(rc) && rc != JOBQ_EDB && rc != JOBQ_EREADONLY;
}

/* With --until-empty, a permanent error stops the foreman (exit status
 * 1): waiting for work it can never do would never end.  1 if it did. */
static int stop_for_good(struct fm *fm, int rc, const char *what, const char *msg) {
  if (!fm->cfg->until_empty || !permanent(rc) || fm->stopping) return 0;
  fm_logp(FM_ERR, "stop_for_good", "%s: %s: stopping, as this will not pass by itself", what,
          msg);
  fm->status = 1;
  begin_stop(fm, 0, "an error that does not pass");
  return 1;
}

/* ---------------------------------------------------------------- jobs and lists */

void fm_list_push(struct fm_list *l, struct fm_job *j) {
  j->next = NULL;
  j->prev = l->tail;
  if (l->tail != NULL)
    l->tail->next = j;
  else
    l->head = j;
  l->tail = j;
  l->n++;
}

void fm_list_remove(struct fm_list *l, struct fm_job *j) {
  if (j->prev != NULL)
    j->prev->next = j->next;
  else
    l->head = j->next;
  if (j->next != NULL)
    j->next->prev = j->prev;
  else
    l->tail = j->prev;
  j->prev = j->next = NULL;
  l->n--;
}

struct fm_job *fm_list_pop(struct fm_list *l) {
  struct fm_job *j = l->head;
  if (j != NULL) fm_list_remove(l, j);
  return j;
}

static struct fm_job *job_new(struct fm *fm, const jobq_job *src, int lane) {
  struct fm_job *j = fm_xmalloc(sizeof *j);
  memset(j, 0, sizeof *j);
  j->job = *src;
  j->lane = lane;
  j->job.queue = fm_xstrdup(src->queue);
  j->job.key = src->key != NULL ? fm_xstrdup(src->key) : NULL;
  j->job.payload = fm_xmalloc(src->payload_len + 1);
  if (src->payload_len > 0) memcpy(j->job.payload, src->payload, src->payload_len);
  ((char *)j->job.payload)[src->payload_len] = '\0';
  j->gen = fm->gen;
  j->claimed_ms = fm_now_ms();
  int64_t mine = src->timeout_ms, theirs = fm->cfg->timeout_ms;
  j->timeout_ms = mine > 0 && theirs > 0 ? (mine < theirs ? mine : theirs)
                  : mine > 0             ? mine
                                         : theirs;
  return j;
}

static void job_free(struct fm_job *j) {
  free(j->job.queue);
  free(j->job.key);
  free(j->job.payload);
  free(j->kill_note);
  free(j);
}

static void kill_job(struct fm *fm, struct fm_job *job, enum fm_kill why,
                     int hard) {
  if (fm->cfg->persistent)
    fm_workers_kill(fm, job, why, hard);
  else
    fm_child_kill(fm, job, why, hard);
}

/* Gives a claimed job back at once, its attempt not spent. */
static void release_job(struct fm *fm, struct fm_job *job) {
  struct fm_outcome out = {.kind = JOBQ_ACK_RELEASE, .retry_in_ms = -1};
  fm_acker_add(fm, job, &out);
  job_free(job);
}

/* ---------------------------------------------------------------- outcomes */

void fm_killed_outcome(struct fm *fm, const struct fm_job *job,
                       const struct fm_tail *err, const char *how,
                       struct fm_outcome *out) {
  char what[600], d[FM_DUR_BUF];
  memset(out, 0, sizeof *out);
  out->retry_in_ms = -1;
  switch (job->kill) {
    case FM_KILL_TIMEOUT:
      fm->timeouts++;
      snprintf(what, sizeof what, "timed out after %s (%s)",
               fm_fmt_ms(d, job->timeout_ms), how);
      out->kind = JOBQ_ACK_FAIL;
      out->word = "timed out";
      break;
    case FM_KILL_CANCEL:
      snprintf(what, sizeof what, "cancelled by an operator (%s)", how);
      out->kind = JOBQ_ACK_FAIL;
      out->word = "cancelled";
      break;
    case FM_KILL_PROTOCOL:
      snprintf(what, sizeof what, "worker protocol error: %s",
               job->kill_note != NULL ? job->kill_note : "?");
      out->kind = JOBQ_ACK_FAIL;
      out->word = "failed";
      break;
    case FM_KILL_STOP:
      out->kind = JOBQ_ACK_RELEASE;
      out->word = "released";
      return;
    case FM_KILL_CUT:
      snprintf(what, sizeof what,
               "stopped: no heartbeat succeeded for the lease (the database was out of "
               "reach or read-only) (%s)",
               how);
      out->kind = JOBQ_ACK_RETRY;
      out->word = "stopped";
      break;
    case FM_KILL_LOST:
    case FM_KILL_NONE:
      out->kind = 0;
      out->word = "dropped";
      return;
  }
  out->data = fm_error_text(what, err, &out->len);
}

static void log_job(const struct fm_job *job, const struct fm_outcome *out) {
  int error = out->kind != JOBQ_ACK_COMPLETE && out->data != NULL;
  fm_log_job(&(struct fm_log_job){job->job.id, job->job.queue, job->job.attempt,
                                  job->job.max_attempts, fm_now_ms() - job->started_ms,
                                  out->word, error ? out->data : NULL, error ? out->len : 0});
}

void fm_job_finished(struct fm *fm, struct fm_job *job,
                     struct fm_outcome *out) {
  fm_list_remove(&fm->running, job);
  double ms = (double)(uv_hrtime() - job->started_ns) / 1e6;
  fm->job_ms = fm->job_ms > 0 ? fm->job_ms * 0.8 + ms * 0.2 : ms;
  if (fm->cfg->verbose) log_job(job, out);
  fm_acker_add(fm, job, out);
  job_free(job);
  fm_kick(fm);
  fm_maybe_finish(fm);
}

/* ---------------------------------------------------------------- the state file */

void fm_receipt_add(struct fm *fm, const struct fm_pending *p) {
  if (fm->cfg->state == NULL) return;
  jobq_receipt *r = &fm->seen.receipts[fm->receipt_next];
  r->id = p->ack.id;
  snprintf(r->queue, sizeof r->queue, "%s", p->queue);
  memcpy(r->claim, p->ack.claim, sizeof r->claim);
  r->claimed_at_ms = p->claimed_at_ms;
  fm->receipt_next = (fm->receipt_next + 1) % FM_STATE_RECEIPTS;
  if (fm->seen.n < FM_STATE_RECEIPTS) fm->seen.n++;
  if (p->ack.id > fm->seen.seq) fm->seen.seq = p->ack.id;
  fm->seen_dirty = 1;
}

/* A copy of what the foreman saw, for the state file. */
static void seen_copy(const struct fm *fm, struct fm_state_db *out) {
  *out = fm->seen;
  out->receipts = fm_xmalloc((fm->seen.n ? fm->seen.n : 1) * sizeof *out->receipts);
  memcpy(out->receipts, fm->seen.receipts, fm->seen.n * sizeof *out->receipts);
}

/* Logs a state file error once (until it changes). */
static void state_error(struct fm *fm, const char *why) {
  if (why[0] == '\0' || strcmp(why, fm->state_err) == 0) return;
  snprintf(fm->state_err, sizeof fm->state_err, "%s", why);
  fm_logp(FM_WARNING, "state_failed",
          "%s: going on without it (a worker started after a loss of this database's "
          "writes cannot tell)",
          why);
}

/* ---------------------------------------------------------------- the watch */

static void on_watch_closed(uv_handle_t *h) {
  struct fm_watch *w = h->data;
  close(w->fd);
  free(w);
}

static void watch_close(struct fm *fm) {
  struct fm_watch *w = fm->watch;
  if (w == NULL) return;
  fm->watch = NULL;
  uv_close((uv_handle_t *)&w->poll, on_watch_closed);
}

static void on_watch(uv_poll_t *p, int status, int events) {
  struct fm_watch *w = p->data;
  (void)status;
  (void)events;
  /* Level-triggered: stop until a claim has drained it (jobq_changed). */
  uv_poll_stop(p);
  w->on = 0;
  if (!w->fm->maybe_work) w->fm->woken_only = 1;
  w->fm->maybe_work = 1;
  fm_kick(w->fm);
}

static void watch_arm(struct fm *fm) {
  struct fm_watch *w = fm->watch;
  if (w == NULL || w->on || fm->stopping) return;
  if (uv_poll_start(&w->poll, UV_READABLE, on_watch) == 0) w->on = 1;
}

static void watch_set(struct fm *fm, int fd) {
  watch_close(fm);
  if (fd < 0) return;
  struct fm_watch *w = fm_xmalloc(sizeof *w);
  memset(w, 0, sizeof *w);
  w->fd = fd;
  w->fm = fm;
  if (uv_poll_init(fm->loop, &w->poll, fd) != 0) {
    close(fd);
    free(w);
    return;
  }
  w->poll.data = w;
  fm->watch = w;
  watch_arm(fm);
}

/* ---------------------------------------------------------------- claims */

static int capacity(const struct fm *fm) {
  return fm->cfg->persistent ? fm_workers_up(fm) : fm->cfg->concurrency;
}

/* How many jobs could start now. */
static int free_slots(const struct fm *fm) {
  if (fm->cfg->persistent) return fm_workers_idle(fm);
  return fm->cfg->concurrency - (int)fm->running.n;
}

static int free_slot(const struct fm *fm) { return free_slots(fm) > 0; }

static void poll_restart(struct fm *fm, int64_t ms);
static void on_poll(uv_timer_t *t);

static void on_stats(struct fm *fm, struct fm_op *op) {
  fm->stats_out = 0;
  if (fm->closed || op->rc != JOBQ_OK) {
    if (!fm->closed && op->rc != JOBQ_OK &&
        !stop_for_good(fm, op->rc, "cannot read the queues' counts", op->errmsg))
      fm_logp(FM_WARNING, "stats_failed", "cannot read the queues' counts: %s",
              op->errmsg);
    fm_op_free(op);
    return;
  }
  const struct fm_config *cfg = fm->cfg;
  int64_t left = 0;
  for (size_t i = 0; i < op->nstats; i++) {
    const jobq_queue_stats *st = &op->stats[i];
    int mine = cfg->nq == 0;
    for (size_t k = 0; k < cfg->nq && !mine; k++)
      mine = strcmp(cfg->queues[k], st->name) == 0;
    /* A paused queue's jobs cannot be claimed until it is resumed. */
    if (mine && !st->paused)
      left += st->ready + st->scheduled + st->waiting + st->pending + st->running;
  }
  fm_op_free(op);
  if (left == 0 && fm->running.n == 0 && fm->waiting.n == 0 &&
      !fm_acker_busy(fm) && !fm->stopping)
    begin_stop(fm, 0, "the queues are empty");
}

/* --until-empty: asks for the counts when this foreman has nothing. */
static void check_empty(struct fm *fm) {
  if (!fm->cfg->until_empty || fm->stats_out || fm->stopping ||
      fm->running.n > 0 || fm->waiting.n > 0)
    return;
  fm->stats_out = 1;
  fm_db_submit(fm, fm_op_new(FM_OP_STATS, fm->gen, on_stats), 0);
}

int fm_prefetch_next(int prefetch, int short_batch, int starved, int concurrency,
                     double job_ms, int min, int max) {
  int p = prefetch;
  if (short_batch)
    p = p / 2;
  else if (starved)
    p = p * 2 + 1;
  /* Never hold back more than the slots get through in about 50 ms: a
   * job waiting here is one that another foreman could be running, and
   * one that waits a whole lease when this foreman dies.  Jobs of a few
   * microseconds count as 10: an average that small is mostly noise. */
  double room = concurrency * 50.0 / (job_ms > 0.01 ? job_ms : 0.01);
  if (p > room) p = (int)room;
  if (p < min) p = min;
  if (p > max) p = max;
  return p;
}

static void adapt_prefetch(struct fm *fm, int short_batch) {
  const struct fm_config *cfg = fm->cfg;
  fm->prefetch = fm_prefetch_next(fm->prefetch, short_batch, fm->starved, cfg->concurrency,
                                  fm->job_ms, cfg->prefetch, cfg->prefetch_max);
  fm->starved = 0;
}

/* Says when wake-ups stop coming (a lost LISTEN connection, which the
 * handle opens again by itself) and when they are back.  Meanwhile the
 * poll timer claims, and only it re-arms the watch: never a claim on
 * every turn of the loop. */
static void watch_note(struct fm *fm, const struct fm_op *op) {
  if (!op->drain) return;
  if (op->watch_lost && !fm->watch_down) {
    poll_restart(fm, fm->cfg->poll_ms);
    char d[FM_DUR_BUF];
    fm_logp(FM_WARNING, "wakeups_lost", "%s: claiming every %s meanwhile", op->watch_msg,
            fm_fmt_ms(d, fm->cfg->poll_ms));
  } else if (!op->watch_lost && fm->watch_down) {
    fm_logp(FM_NOTICE, "wakeups_back", "wake-ups from the database are back");
  }
  fm->watch_down = op->watch_lost;
}

/* A poll found nothing while wake-ups come: the next one when a job of
 * its queues comes due in due_in_ms (-1: none waits for its time; 0:
 * not known), at most IDLE_POLLS polls from now. */
static void idle_sleep(struct fm *fm, int64_t due_in_ms) {
  int64_t most = fm->cfg->poll_ms * IDLE_POLLS;
  /* Jitter spreads the fleet's polls; a job due is not looked for early. */
  int64_t ms = due_in_ms < 0 || due_in_ms > most ? fm_jitter(most, 20)
                                                 : due_in_ms + fm_jitter(POLL_MIN_MS, 100);
  if (due_in_ms == 0 || ms <= fm->cfg->poll_ms || fm->stopping || fm->closed) return;
  fm->poll_ms = fm->cfg->poll_ms;
  fm->idle = 1;
  uv_timer_start(&fm->poll_timer, on_poll, (uint64_t)ms, 0);
}

static void on_claimed(struct fm *fm, struct fm_op *op) {
  fm->lanes[op->lane].claim_out = 0;
  fm->claiming -= (int64_t)op->max;
  if (fm->closed) {
    fm_op_free(op);
    return;
  }
  watch_note(fm, op);
  if (op->rc == FM_STALE || op->gen != fm->gen) {
    /* Claimed under a session that was given up: never run. */
    fm->lost += (int64_t)op->njobs;
    fm_op_free(op);
    fm_kick(fm);
    return;
  }
  if (fm_op_expired(fm, op)) return;
  if (op->rc != JOBQ_OK) {
    if (stop_for_good(fm, op->rc, "cannot claim jobs", op->errmsg)) {
      fm_op_free(op);
      return;
    }
    if (strcmp(fm->last_claim_err, op->errmsg) != 0)
      fm_logp(FM_WARNING, "claim_failed", "cannot claim jobs: %s", op->errmsg);
    snprintf(fm->last_claim_err, sizeof fm->last_claim_err, "%s", op->errmsg);
    if (op->rc == JOBQ_ECONN && op->lane == 0) fm->reopen_next = 1;
    fm->maybe_work = 0; /* the poll timer tries again */
    fm_op_free(op);
    return;
  }
  if (fm->last_claim_err[0] != '\0')
    fm_logp(FM_NOTICE, "claiming_again", "claiming again");
  fm->last_claim_err[0] = '\0';
  if (!op->skipped) {
    fm->claims++;
    fm->empty_claims += op->njobs == 0;
  }
  for (size_t i = 0; i < op->njobs; i++) {
    if (op->jobs[i].id > fm->seen.seq) fm->seen.seq = op->jobs[i].id;
    struct fm_job *job = job_new(fm, &op->jobs[i], op->lane);
    job->held = i >= op->start_now;
    fm_list_push(&fm->waiting, job);
  }
  int short_batch = op->njobs < op->max;
  /* Skipped, and a heartbeat of ours made jobs ready meanwhile: claim
   * again. */
  if (short_batch && !(op->skipped && fm->own_work)) fm->maybe_work = 0;
  adapt_prefetch(fm, short_batch);
  if (op->njobs > 0) poll_restart(fm, POLL_MIN_MS);
  if (op->njobs == 0 && op->look_due && !op->watch_lost) idle_sleep(fm, op->due_in_ms);
  fm_op_free(op);
  if (!fm->watch_down) watch_arm(fm);
  if (fm->stopping || fm->suspended) {
    /* The stop (or the suspension) came while the claim was out: hand
     * them back. */
    struct fm_job *j;
    while ((j = fm_list_pop(&fm->waiting)) != NULL) release_job(fm, j);
    fm_acker_flush(fm);
    fm_maybe_finish(fm);
    return;
  }
  fm_kick(fm);
  if (short_batch) check_empty(fm);
}

/* A lane for a claim alone: joined, with no claim and no acknowledgement
 * at its database thread (the claim would only queue behind it, and it
 * goes with the outcomes that gathered meanwhile once that one is back,
 * foreman/acker.c); lane 0 first.  A look that only lane 0 can take (its
 * wake-ups, when a job comes due) waits for lane 0.  -1: none. */
static int free_lane(const struct fm *fm, int look) {
  for (int i = 0; i < (look ? 1 : fm->cfg->connections); i++)
    if (fm->lanes[i].state == FM_LANE_JOINED && !fm->lanes[i].claim_out &&
        !fm->acker[i].inflight)
      return i;
  return -1;
}

static void on_joined(struct fm *fm, struct fm_op *op);

/* Every lane open is at work while the foreman wants jobs: one more
 * joins the session, up to --connections, one at a time. */
static void lane_open(struct fm *fm) {
  int k = -1;
  for (int i = 1; i < fm->cfg->connections; i++) {
    if (fm->lanes[i].state == FM_LANE_JOINING) return;
    if (fm->lanes[i].state == FM_LANE_NONE && k < 0) k = i;
  }
  if (k < 0 || fm->root == NULL || fm_now_ms() < fm->lanes[k].next_try_ms) return;
  int rc = fm->db[k].started ? 0 : fm_db_start(fm, k);
  if (rc != 0) {
    fm_logp(FM_WARNING, "connection_failed",
            "cannot start the thread of database connection %d: %s", k + 1, uv_strerror(rc));
    fm->lanes[k].next_try_ms = fm_now_ms() + RECONNECT_MAX_MS;
    return;
  }
  struct fm_op *op = fm_op_new(FM_OP_JOIN, fm->gen, on_joined);
  op->lane = k;
  op->session = fm->root;
  fm->lanes[k].state = FM_LANE_JOINING;
  fm_db_submit(fm, op, 0);
}

struct fm_op *fm_claim_op(struct fm *fm, int lane) {
  const struct fm_config *cfg = fm->cfg;
  if (!fm->connected || fm->suspended || fm->stopping || !fm->maybe_work) return NULL;
  if (fm_now_ms() < fm->hold_until_ms) return NULL;
  int cap = capacity(fm);
  if (cap <= 0) return NULL;
  int look = fm->woken_only || fm->polled || fm->idle;
  if (lane < 0) {
    /* Alone, refill at half: fewer, bigger claims. */
    if ((int64_t)fm->waiting.n > fm->prefetch / 2) return NULL;
    lane = free_lane(fm, look);
  } else if (fm->lanes[lane].claim_out || (lane > 0 && look)) {
    return NULL;
  }
  int64_t want = (int64_t)cap + fm->prefetch - (int64_t)fm->running.n -
                 (int64_t)fm->waiting.n - fm->claiming;
  if (want > cfg->batch) want = cfg->batch;
  if (want <= 0) return NULL;
  if (lane < 0) {
    if (!look) lane_open(fm);
    return NULL;
  }
  struct fm_op *op = fm_op_new(FM_OP_CLAIM, fm->gen, on_claimed);
  op->lane = lane;
  op->max = (size_t)want;
  /* The rest is a prefetch: held back until a slot frees, and costing
   * no attempt if this foreman dies before it starts them. */
  int now = free_slots(fm) - (int)fm->waiting.n;
  op->start_now = now > 0 ? (size_t)now : 0;
  op->drain = lane == 0 && fm->watch != NULL;
  /* Woken and nothing else: the wake-up may be for another queue
   * (jobq_watch_queues), or our own commit (SQLite's log grows with
   * ours too), and then the claim would find nothing.  jobq_changed()
   * tells, counting our own outcomes that made jobs ready (the next of a
   * key, a barrier, a retry). */
  op->if_changed = op->drain && fm->woken_only;
  /* A poll, or a wake-up while idle (a delayed job or retry may have
   * come, earlier than the sleep's end). */
  op->look_due = op->drain && (fm->polled || fm->idle) && !fm->watch_down;
  op->may_look = !fm->polled;
  fm->polled = 0;
  fm->woken_only = 0;
  fm->own_work = 0;
  fm->lanes[lane].claim_out = 1;
  fm->lanes[lane].used_ms = fm_now_ms();
  fm->claiming += want;
  return op;
}

/* Claims when the state allows.  Outcomes waiting for their batch do not
 * come along: an idle foreman's claim is a job waiting to start, and it
 * goes alone, without the ack's work in its transaction. */
static void claim(struct fm *fm) {
  struct fm_op *op = fm_claim_op(fm, -1);
  if (op != NULL) fm_db_submit(fm, op, 0);
}

static void on_poll(uv_timer_t *t) {
  struct fm *fm = t->data;
  int64_t next = fm->poll_ms;
  fm->poll_ms = fm->poll_ms * 2 > fm->poll_cap_ms ? fm->poll_cap_ms : fm->poll_ms * 2;
  uv_timer_start(&fm->poll_timer, on_poll, (uint64_t)fm_jitter(next, 20), 0);
  fm->maybe_work = 1;
  fm->woken_only = 0;
  fm->polled = 1;
  fm->idle = 0;
  watch_arm(fm);
  fm_kick(fm);
  if (fm->running.n == 0 && fm->waiting.n == 0 && fm->claiming == 0) check_empty(fm);
}

/* The longest poll interval, from the live sessions the heartbeat
 * counted: without wake-ups, an idle fleet polls --fleet-polls times a
 * second in all (each foreman every peers / fleet-polls seconds, its
 * jitter spreading them), never more often than --poll each, and never
 * less than IDLE_POLLS polls' time.  Any foreman's poll finds a job put
 * meanwhile, so the fleet's pickup stays about 1 / fleet-polls seconds
 * while its cost stops growing with its size.  With wake-ups, --poll. */
static void poll_cap(struct fm *fm, int64_t peers) {
  const struct fm_config *cfg = fm->cfg;
  int64_t cap = cfg->poll_ms;
  if ((fm->watch == NULL || fm->watch_down) && cfg->fleet_polls > 0 && peers > 0) {
    int64_t share = peers * 1000 / cfg->fleet_polls;
    if (share > cap) cap = share;
    if (cap > cfg->poll_ms * IDLE_POLLS) cap = cfg->poll_ms * IDLE_POLLS;
  }
  fm->poll_cap_ms = cap;
  if (fm->poll_ms > cap) fm->poll_ms = cap;
}

static void poll_restart(struct fm *fm, int64_t ms) {
  if (fm->stopping || fm->closed) return;
  fm->idle = 0;
  if (ms > fm->poll_cap_ms) ms = fm->poll_cap_ms;
  fm->poll_ms = ms;
  uv_timer_start(&fm->poll_timer, on_poll, (uint64_t)fm_jitter(ms, 20), 0);
}

static void on_hold(uv_timer_t *t) { fm_kick(t->data); }

/* ---------------------------------------------------------------- running */

/* Starts job in a free slot; -1 when it could not (it is released). */
static int start_job(struct fm *fm, struct fm_job *job) {
  job->started_ms = fm_now_ms();
  job->started_ns = uv_hrtime();
  if (job->held) fm_db_note_started(fm, job);
  fm_list_push(&fm->running, job);
  int rc = fm->cfg->persistent ? fm_workers_start(fm, job)
                               : fm_child_start(fm, job);
  if (rc == 0) return 0;
  fm_list_remove(&fm->running, job);
  fm_logp(FM_ERR, "job_start_failed",
          "cannot start '%s' for job %lld: %s: releasing it and claiming "
          "nothing for 1s",
          fm->cfg->argv[0], (long long)job->job.id, uv_strerror(rc));
  release_job(fm, job);
  fm->hold_until_ms = fm_now_ms() + HOLD_MS;
  uv_timer_start(&fm->hold_timer, on_hold, HOLD_MS, 0);
  return -1;
}

void fm_kick(struct fm *fm) {
  if (fm->closed) return;
  /* A foreman resumed after a pause handles its children's exits before
   * its lease timer: it must not start a job under a lost session. */
  if (lease_check(fm)) return;
  while (!fm->stopping && fm->waiting.n > 0 && free_slot(fm)) {
    struct fm_job *job = fm_list_pop(&fm->waiting);
    if (start_job(fm, job) != 0) break;
  }
  if (fm->waiting.n == 0 && fm->maybe_work && fm->connected && free_slot(fm))
    fm->starved = 1;
  claim(fm);
}

static void handle_cancels(struct fm *fm, const int64_t *ids, size_t n) {
  for (size_t i = 0; i < n; i++) {
    struct fm_job *j;
    for (j = fm->running.head; j != NULL; j = j->next)
      if (j->job.id == ids[i] && j->gen == fm->gen) break;
    if (j != NULL) {
      if (j->kill == FM_KILL_NONE) {
        if (fm->cfg->verbose)
          fm_logp(FM_NOTICE, "cancel_requested",
                  "job %lld: cancel requested: stopping it", (long long)ids[i]);
        kill_job(fm, j, FM_KILL_CANCEL, 0);
      }
      continue;
    }
    for (j = fm->waiting.head; j != NULL; j = j->next)
      if (j->job.id == ids[i]) break;
    if (j != NULL) {
      /* Not started: released, it ends as cancelled. */
      fm_list_remove(&fm->waiting, j);
      release_job(fm, j);
    }
  }
}

/* ---------------------------------------------------------------- the session */

static void connect_db(struct fm *fm);

static void on_reconnect(uv_timer_t *t) { connect_db(t->data); }

static void on_lease(uv_timer_t *t);

static void lease_arm(struct fm *fm) {
  int64_t left = fm->beat_ok_ms + fm->cfg->lease_ms - fm_now_ms();
  uv_timer_start(&fm->lease_timer, on_lease, (uint64_t)(left < 0 ? 0 : left), 0);
}

int fm_lease_out(const struct fm *fm) {
  return fm_now_ms() - fm->beat_ok_ms >= fm->cfg->lease_ms;
}

/* The session's lease may have run out: it may have been reaped and its
 * jobs given to others, so none of them may run here any more.  The
 * running ones are stopped (their outcome, a retry, waits with the
 * others), the claimed ones released, and nothing starts until a
 * heartbeat shows the session alive. */
static void suspend(struct fm *fm) {
  char d[FM_DUR_BUF];
  fm->suspended = 1;
  size_t running = 0, waiting = fm->waiting.n;
  for (struct fm_job *j = fm->running.head; j != NULL; j = j->next, running++)
    kill_job(fm, j, FM_KILL_CUT, 1);
  struct fm_job *j;
  while ((j = fm_list_pop(&fm->waiting)) != NULL) release_job(fm, j);
  fm_logp(FM_ERR, "session_suspended",
          "no heartbeat succeeded for %s (the lease): the session may be gone; stopped "
          "%zu running jobs and released %zu claimed ones; keeping %zu outcomes to "
          "record, and the session, until the database answers",
          fm_fmt_ms(d, fm->cfg->lease_ms), running, waiting, fm_acker_pending(fm));
}

/* Suspends the session when its lease may have run out: 1 while it is
 * suspended. */
static int lease_check(struct fm *fm) {
  if (!fm->connected) return 0;
  if (!fm->suspended && fm_lease_out(fm)) suspend(fm);
  return fm->suspended;
}

static void on_lease(uv_timer_t *t) {
  struct fm *fm = t->data;
  if (fm->connected && !lease_check(fm)) lease_arm(fm);
}

static void on_beat(uv_timer_t *t);

/* Whether the cron run of a heartbeat put a job. */
static int cron_put(const struct fm_op *op) {
  for (size_t i = 0; i < op->ncron; i++)
    if (op->cron[i].id > 0 && !op->cron[i].existed) return 1;
  return 0;
}

/* What the cron run of a heartbeat did: each slot put, and a failure
 * once until it changes or heals. */
static void cron_log(struct fm *fm, const struct fm_op *op) {
  for (size_t i = 0; i < op->ncron; i++) {
    const jobq_cron_slot *s = &op->cron[i];
    char when[32];
    time_t t = (time_t)(s->slot_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (s->error != NULL)
      fm_logp(FM_WARNING, "cron_failed", "cron: schedule %s, slot %s: %s", s->name, when,
              s->error);
    else if (s->skipped)
      fm_logp(FM_NOTICE, "cron_skipped", "cron: skipped the missed slot %s of %s", when,
              s->name);
    else
      fm_logp(FM_INFO, "cron_put", "cron: put job %lld of %s (slot %s)%s",
              (long long)s->id, s->name, when,
              s->existed ? ", which already existed" : "");
  }
  if (op->cron_rc == JOBQ_OK) {
    fm->cron_error[0] = '\0';
  } else if (strcmp(fm->cron_error, op->cron_msg) != 0) {
    snprintf(fm->cron_error, sizeof fm->cron_error, "%s", op->cron_msg);
    fm_logp(FM_WARNING, "cron_failed", "cron: cannot put the jobs of the schedules due: %s",
            op->cron_msg);
  }
}

static void on_beat_done(struct fm *fm, struct fm_op *op) {
  fm->beat_out = 0;
  if (fm->closed || op->rc == FM_STALE || op->gen != fm->gen) {
    fm_op_free(op);
    return;
  }
  int64_t third = fm->cfg->lease_ms / 3;
  if (op->state_due) {
    if (op->state_err[0] != '\0') fm->seen_dirty = 1; /* again with the next one */
    state_error(fm, op->state_err);
  }
  if (op->rc == JOBQ_OK) {
    fm->beat_ok_ms = op->began_ms;
    /* A heartbeat held up for longer than the lease (a stalled database)
     * shows that the session was there, not that it still is: another
     * goes at once, and that one resumes a suspended session.  Resumed
     * by any heartbeat that succeeds in time, not only after failures. */
    int stale = fm_lease_out(fm), resumed = fm->suspended && !stale;
    if (stale) uv_timer_start(&fm->beat_timer, on_beat, 0, (uint64_t)third);
    if ((fm->beat_failing || fm->suspended) && !stale) {
      fm_logp(FM_NOTICE, "session_resumed", "heartbeats succeed again%s",
              fm->suspended ? ": the session held; recording what was kept and claiming "
                              "again"
                            : "");
      fm->beat_failing = 0;
      fm->suspended = 0;
      fm->maybe_work = 1;
      uv_timer_start(&fm->beat_timer, on_beat, (uint64_t)third, (uint64_t)third);
    }
    lease_arm(fm);
    handle_cancels(fm, op->cancel, op->ncancel);
    cron_log(fm, op);
    /* Our own commits wake no one here: jobs a reap sent back to ready or
     * a schedule put are claimed now, not at the next poll.  And asleep
     * until a job is due, the wake-ups the heartbeat looked at: news, or
     * their connection just lost (what it missed) or back. */
    int was_down = fm->watch_down;
    watch_note(fm, op);
    poll_cap(fm, op->peers);
    if (op->watch_changed || (op->watch_lost && !was_down) || op->reaped > 0 ||
        cron_put(op)) {
      /* A claim out now, which the heartbeat's look may have made skip,
       * is followed by another. */
      fm->maybe_work = 1;
      fm->woken_only = 0;
      fm->own_work = 1;
      fm_kick(fm);
    }
    fm_op_free(op);
    fm_acker_flush(fm);
    /* Resumed: the outcomes kept go first, a claim with them; with none
     * kept, a claim now. */
    if (resumed) fm_kick(fm);
    return;
  }
  if (fm_op_expired(fm, op)) return;
  /* Asleep until a job is due: a claim, which tells what is wrong (a
   * restored database stops the foreman), no later than at the poll's
   * pace. */
  if (fm->idle) poll_restart(fm, POLL_MIN_MS);
  if (!fm->beat_failing) {
    char d[FM_DUR_BUF];
    int64_t left = fm->beat_ok_ms + fm->cfg->lease_ms - fm_now_ms();
    fm_logp(FM_WARNING, "heartbeat_failed",
            "heartbeat failed: %s: the session is suspended if none succeeds "
            "within %s",
            op->errmsg, fm_fmt_ms(d, left < 0 ? 0 : left));
  }
  fm->beat_failing = 1;
  if (op->rc == JOBQ_ECONN) fm->reopen_next = 1;
  fm_op_free(op);
  int64_t soon = fm->cfg->lease_ms / 10;
  uv_timer_start(&fm->beat_timer, on_beat, (uint64_t)soon, (uint64_t)third);
}

/* A lane's heartbeat: it writes that view's figures (the lease is lane
 * 0's to keep, and its failures are lane 0's to tell) and makes the
 * lane's connection again when it was lost. */
static void on_lane_beat(struct fm *fm, struct fm_op *op) {
  fm->lanes[op->lane].beat_out = 0;
  if (fm->closed || op->rc == FM_STALE || op->gen != fm->gen) {
    fm_op_free(op);
    return;
  }
  if (fm_op_expired(fm, op)) return;
  if (op->rc == JOBQ_OK) handle_cancels(fm, op->cancel, op->ncancel);
  fm_op_free(op);
}

static void on_left(struct fm *fm, struct fm_op *op);

/* Whether lane i has work of the session in hand: jobs it claimed that
 * are not settled, outcomes to record, an op at its thread. */
static int lane_busy(const struct fm *fm, int i) {
  const struct fm_lane *l = &fm->lanes[i];
  if (l->claim_out || l->beat_out || fm->acker[i].n > 0 || fm->acker[i].inflight) return 1;
  for (const struct fm_job *j = fm->running.head; j != NULL; j = j->next)
    if (j->lane == i) return 1;
  for (const struct fm_job *j = fm->waiting.head; j != NULL; j = j->next)
    if (j->lane == i) return 1;
  return 0;
}

/* Heartbeats the lanes past 0, and closes those idle for LANE_IDLE_MS
 * (their connection too): an idle foreman holds one connection. */
static void beat_lanes(struct fm *fm) {
  int64_t now = fm_now_ms();
  for (int i = 1; i < fm->cfg->connections; i++) {
    struct fm_lane *l = &fm->lanes[i];
    if (l->state != FM_LANE_JOINED || l->beat_out) continue;
    if (now - l->used_ms >= LANE_IDLE_MS && !lane_busy(fm, i)) {
      struct fm_op *op = fm_op_new(FM_OP_LEAVE, fm->gen, on_left);
      op->lane = i;
      op->reopen = 1;
      l->state = FM_LANE_LEAVING;
      fm->leaving++;
      fm_logp(FM_INFO, "connection_closed", "idle: closed database connection %d", i + 1);
      fm_db_submit(fm, op, 0);
      continue;
    }
    struct fm_op *op = fm_op_new(FM_OP_HEARTBEAT, fm->gen, on_lane_beat);
    op->lane = i;
    op->in_flight = (int64_t)fm->running.n;
    l->beat_out = 1;
    fm_db_submit(fm, op, 1);
  }
}

static void on_beat(uv_timer_t *t) {
  struct fm *fm = t->data;
  if (!fm->connected) return;
  beat_lanes(fm);
  if (fm->beat_out) return;
  struct fm_op *op = fm_op_new(FM_OP_HEARTBEAT, fm->gen, on_beat_done);
  op->in_flight = (int64_t)fm->running.n;
  /* Idle, or without wake-ups: the heartbeat looks at them, and so
   * opens their connection again at the handle's pace, not the poll's. */
  op->drain = (fm->idle || fm->watch_down) && fm->watch != NULL;
  if (fm->seen_dirty) {
    op->state_due = 1;
    seen_copy(fm, &op->state);
    fm->seen_dirty = 0;
  }
  fm->beat_out = 1;
  fm_db_submit(fm, op, 1);
}

int fm_op_expired(struct fm *fm, struct fm_op *op) {
  if (op->rc != JOBQ_EEXPIRED) return 0;
  /* Suspended, a claim (or the acknowledgement that went with it) finds
   * the lease run out; so does any claim after a stall of the database
   * itself, which no one reaped.  The heartbeat decides: its stall guard
   * gives every lease back, and it resumes the session (the outcomes
   * kept go then) or finds it gone.  What this op carried was not
   * written: the claim took nothing, the outcomes wait. */
  if (fm->suspended && op->kind != FM_OP_HEARTBEAT) {
    fm_op_free(op);
    return 1;
  }
  char why[600];
  snprintf(why, sizeof why, "%s", op->errmsg);
  fm_op_free(op);
  fm_session_lost(fm, why);
  return 1;
}

static void on_left(struct fm *fm, struct fm_op *op) {
  fm->lanes[op->lane].state = FM_LANE_NONE;
  fm->leaving--;
  fm_op_free(op);
  if (fm->leaving == 0 && !fm->closed) connect_db(fm);
}

/* The lanes' views of a session given up are closed, before lane 0
 * opens the next session (which frees the one they joined). */
static void lanes_leave(struct fm *fm) {
  fm->lanes[0].state = FM_LANE_NONE;
  fm->root = NULL;
  for (int i = 1; i < FM_CONN_MAX; i++) {
    struct fm_lane *l = &fm->lanes[i];
    if (l->state != FM_LANE_JOINING && l->state != FM_LANE_JOINED) continue;
    struct fm_op *op = fm_op_new(FM_OP_LEAVE, fm->gen, on_left);
    op->lane = i;
    l->state = FM_LANE_LEAVING;
    fm->leaving++;
    fm_db_submit(fm, op, 0);
  }
}

static void on_joined(struct fm *fm, struct fm_op *op) {
  struct fm_lane *l = &fm->lanes[op->lane];
  if (fm->closed || l->state != FM_LANE_JOINING) {
    /* Leaving already: its LEAVE op follows. */
    fm_op_free(op);
    return;
  }
  if (op->rc == JOBQ_OK) {
    l->state = FM_LANE_JOINED;
    l->retry_ms = 0;
    fm_logp(FM_INFO, "connection_opened",
            "busy: opened database connection %d of %d for claims and outcomes", op->lane + 1,
            fm->cfg->connections);
    fm_op_free(op);
    fm_kick(fm);
    return;
  }
  l->state = FM_LANE_NONE;
  if (fm_op_expired(fm, op)) return;
  l->retry_ms = l->retry_ms == 0 ? 4 * RECONNECT_MIN_MS : l->retry_ms * 2;
  if (l->retry_ms > RECONNECT_MAX_MS) l->retry_ms = RECONNECT_MAX_MS;
  int64_t wait = fm_jitter(l->retry_ms, 50);
  l->next_try_ms = fm_now_ms() + wait;
  char d[FM_DUR_BUF];
  fm_logp(FM_WARNING, "connection_failed",
          "cannot open database connection %d: %s: going on without it for %s",
          op->lane + 1, op->errmsg, fm_fmt_ms(d, wait));
  fm_op_free(op);
}

void fm_session_lost(struct fm *fm, const char *why) {
  if (!fm->connected) return;
  fm->connected = 0;
  fm->suspended = 0;
  fm->gen++;
  fm_db_set_gen(fm, fm->gen);
  lanes_leave(fm);
  uv_timer_stop(&fm->beat_timer);
  uv_timer_stop(&fm->lease_timer);
  watch_close(fm);
  size_t running = 0, waiting = 0;
  for (struct fm_job *j = fm->running.head; j != NULL; j = j->next) {
    if (j->gen >= fm->gen) continue;
    /* At once: another worker may already be running it. */
    kill_job(fm, j, FM_KILL_LOST, 1);
    running++;
  }
  struct fm_job *j;
  while ((j = fm_list_pop(&fm->waiting)) != NULL) {
    job_free(j);
    waiting++;
  }
  size_t dropped = fm_acker_drop(fm, fm->gen);
  fm->lost += (int64_t)(running + waiting + dropped);
  fm_logp(FM_ERR, "session_lost",
          "session lost: %s: killed %zu running jobs, dropped %zu claimed jobs "
         "and %zu outcomes not yet recorded (those jobs run again)%s",
         why, running, waiting, dropped,
         fm->stopping ? "" : "; opening a new session");
  if (fm->stopping) {
    fm_maybe_finish(fm);
    return;
  }
  connect_db(fm);
}

static void describe_start(struct fm *fm, const struct fm_op *op) {
  const struct fm_config *cfg = fm->cfg;
  char queues[256], command[256], lease[FM_DUR_BUF];
  size_t o = 0;
  queues[0] = '\0';
  for (size_t i = 0; i < cfg->nq && o < sizeof queues; i++)
    o += (size_t)snprintf(queues + o, sizeof queues - o, "%s%s", i ? ", " : "",
                          cfg->queues[i]);
  o = 0;
  command[0] = '\0';
  for (size_t i = 0; cfg->argv[i] != NULL && o < sizeof command; i++)
    o += (size_t)snprintf(command + o, sizeof command - o, "%s%s", i ? " " : "",
                          cfg->argv[i]);
  char note[600] = "";
  if (op->watch_fd < 0)
    snprintf(note, sizeof note, "; no wake-ups from the database (%s): polling",
             op->watch_msg);
  char *url = jobq_url_redact(cfg->url);
  fm_logp(FM_NOTICE, "started", "started: session %s on %s, %s%s%s, %d %s '%s', lease %s%s",
         op->session_id, url != NULL ? url : "?",
         cfg->nq == 0 ? "every queue" : cfg->nq == 1 ? "queue" : "queues",
         cfg->nq == 0 ? "" : " ", queues, cfg->concurrency,
         cfg->persistent ? "persistent workers of" : "jobs at once of", command,
         fm_fmt_ms(lease, cfg->lease_ms), note);
  free(url);
}

static void on_connected(struct fm *fm, struct fm_op *op) {
  const struct fm_config *cfg = fm->cfg;
  fm->connecting = 0;
  if (fm->closed) {
    fm_op_free(op);
    return;
  }
  state_error(fm, op->state_err);
  if (op->rc != JOBQ_OK) {
    int rc = op->rc;
    /* At the start, an error that will not pass is the answer: a wrong
     * password, a role without the privileges, a bad URL.  Not a database
     * that lost writes: the foreman waits for the operator's epoch bump,
     * and goes on by itself once it is done. */
    if (!fm->ever_connected && rc != JOBQ_EIDENTITY && (permanent(rc) || rc == JOBQ_EREADONLY)) {
      fm_logp(FM_ERR, "start_failed", "cannot start: %s", op->errmsg);
      fm->status = rc == JOBQ_EINVAL || rc == JOBQ_EURL || rc == JOBQ_ESCHEMA ? 2 : 1;
      fm_op_free(op);
      begin_stop(fm, 1, NULL);
      return;
    }
    if (stop_for_good(fm, rc, "cannot open a session", op->errmsg)) {
      fm_op_free(op);
      return;
    }
    if (rc == JOBQ_ECONN) fm->reopen_next = 1;
    /* Later, it may be mended while the foreman waits (a password file
     * put right, a grant given back): tried again, but seldom. */
    fm->reconnect_ms = fm->reconnect_ms == 0 ? RECONNECT_MIN_MS : fm->reconnect_ms * 2;
    if (fm->reconnect_ms > RECONNECT_MAX_MS || (permanent(rc) && rc != JOBQ_EIDENTITY))
      fm->reconnect_ms = RECONNECT_MAX_MS;
    int64_t wait = fm_jitter(fm->reconnect_ms, 50);
    char d[FM_DUR_BUF];
    fm_logp(permanent(rc) ? FM_ERR : FM_WARNING, "connect_failed",
            "cannot open a session: %s: %strying again in %s", op->errmsg,
            permanent(rc) ? "this will not pass by itself; " : "", fm_fmt_ms(d, wait));
    fm_op_free(op);
    if (fm->stopping)
      fm_maybe_finish(fm);
    else
      uv_timer_start(&fm->reconnect_timer, on_reconnect, (uint64_t)wait, 0);
    return;
  }
  if (!fm->ever_connected)
    describe_start(fm, op);
  else
    fm_logp(FM_NOTICE, "session_new", "new session %s: claiming again", op->session_id);
  /* Receipts of another database, or of an epoch given up since, are no
   * longer worth keeping. */
  if (strcmp(fm->seen.queue_id, op->ident.queue_id) != 0 || fm->seen.epoch != op->ident.epoch) {
    memcpy(fm->seen.queue_id, op->ident.queue_id, sizeof fm->seen.queue_id);
    fm->seen.epoch = op->ident.epoch;
    fm->seen.seq = 0;
    fm->seen.n = 0;
    fm->receipt_next = 0;
  }
  if (op->ident.seq > fm->seen.seq) fm->seen.seq = op->ident.seq;
  fm->seen_dirty = fm->cfg->state != NULL;
  fm->connected = 1;
  fm->root = op->session;
  fm->lanes[0].state = FM_LANE_JOINED;
  fm->ever_connected = 1;
  fm_notify_ready(fm, op->session_id);
  fm->reconnect_ms = 0;
  fm->beat_ok_ms = op->began_ms;
  fm->beat_failing = 0;
  watch_set(fm, op->watch_fd);
  op->watch_fd = -1; /* the watch owns it now */
  fm_op_free(op);
  int64_t third = cfg->lease_ms / 3;
  uv_timer_start(&fm->beat_timer, on_beat, (uint64_t)third, (uint64_t)third);
  lease_arm(fm);
  fm->maybe_work = 1;
  fm->woken_only = 0;
  if (fm->stopping) {
    fm_maybe_finish(fm);
    return;
  }
  poll_restart(fm, POLL_MIN_MS);
  fm_kick(fm);
}

static void connect_db(struct fm *fm) {
  if (fm->connecting || fm->connected || fm->closed || fm->stopping || fm->leaving > 0) return;
  struct fm_op *op = fm_op_new(FM_OP_CONNECT, fm->gen, on_connected);
  /* What the last session saw goes to the file first (the next session
   * may be refused for a long time). */
  if (fm->seen_dirty && fm->seen.queue_id[0] != '\0') {
    op->state_due = 1;
    seen_copy(fm, &op->state);
    fm->seen_dirty = 0;
  }
  op->reopen = fm->reopen_next;
  fm->reopen_next = 0;
  fm->connecting = 1;
  fm_db_submit(fm, op, 0);
}

/* ---------------------------------------------------------------- stopping */

static void finish(struct fm *fm) {
  fm->closed = 1;
  uv_timer_t *timers[] = {&fm->beat_timer,      &fm->lease_timer, &fm->poll_timer,
                          &fm->reconnect_timer, &fm->grace_timer, &fm->hold_timer};
  for (size_t i = 0; i < sizeof timers / sizeof timers[0]; i++)
    uv_close((uv_handle_t *)timers[i], NULL);
  uv_close((uv_handle_t *)&fm->sig_term, NULL);
  uv_close((uv_handle_t *)&fm->sig_int, NULL);
  uv_close((uv_handle_t *)&fm->sig_hup, NULL);
  watch_close(fm);
  fm_notify_close(fm);
  fm_acker_close(fm);
  fm_workers_close(fm);
  fm_cgroup_close(fm);
  fm_guard_close(fm);
  /* Closes the session: whatever it still holds goes back to ready. */
  fm_db_stop(fm);
  if (fm->seen_dirty && fm->seen.queue_id[0] != '\0') {
    char why[320] = "";
    if (fm_db_write_state(fm->cfg, &fm->seen, why, sizeof why) != 0) state_error(fm, why);
  }
  if (fm->ever_connected) {
    char d[FM_DUR_BUF];
    fm_logp(FM_NOTICE, "stopped", "stopped after %s: %lld done, %lld failed, %lld retried later, "
           "%lld released, %lld cancelled, %lld lost; %lld claims, %lld empty; "
           "session closed",
           fm_fmt_ms(d, fm_now_ms() - fm->started_ms), (long long)fm->done,
           (long long)fm->failed, (long long)fm->retried, (long long)fm->released,
           (long long)fm->cancelled, (long long)fm->lost, (long long)fm->claims,
           (long long)fm->empty_claims);
  }
}

void fm_maybe_finish(struct fm *fm) {
  if (!fm->stopping || fm->closed) return;
  if (fm->running.n > 0) return;
  if (fm->workers != NULL && fm_workers_alive(fm) > 0) return;
  if (fm->connected && fm_acker_busy(fm)) {
    /* A suspended session's outcomes wait for the database until the
     * grace is over (or a second signal); then they are dropped. */
    if (!fm->suspended || !fm->grace_over) {
      fm_acker_flush(fm);
      return;
    }
    fm_logp(FM_ERR, "outcomes_dropped",
            "the database did not answer within the grace: dropping %zu outcomes not "
            "yet recorded (those jobs run again)",
            fm_acker_pending(fm));
  }
  finish(fm);
}

static void on_grace(uv_timer_t *t) {
  struct fm *fm = t->data;
  char d[FM_DUR_BUF];
  fm->grace_over = 1;
  if (fm->running.n > 0)
    fm_logp(FM_WARNING, "grace_over",
            "the grace of %s is over: stopping %zu running jobs (they go back "
            "to the queue)",
            fm_fmt_ms(d, fm->cfg->grace_ms), fm->running.n);
  for (struct fm_job *j = fm->running.head; j != NULL; j = j->next)
    kill_job(fm, j, FM_KILL_STOP, 0);
  if (fm->workers != NULL) fm_workers_terminate(fm, 0);
}

static void begin_stop(struct fm *fm, int fast, const char *why) {
  if (fm->closed) return;
  if (!fm->stopping) {
    fm->stopping = 1;
    fm_notify_stopping(fm);
    size_t released = fm->waiting.n;
    uv_timer_stop(&fm->poll_timer);
    uv_timer_stop(&fm->reconnect_timer);
    uv_timer_stop(&fm->hold_timer);
    watch_close(fm);
    struct fm_job *j;
    while ((j = fm_list_pop(&fm->waiting)) != NULL) release_job(fm, j);
    fm_acker_flush(fm);
    if (fm->workers != NULL) fm_workers_stop(fm);
    if (why != NULL && !fast) {
      char d[FM_DUR_BUF];
      fm_logp(FM_NOTICE, "stopping", "stopping (%s): %zu running jobs may finish within %s, %zu "
             "claimed jobs released%s",
             why, fm->running.n, fm_fmt_ms(d, fm->cfg->grace_ms), released,
             strncmp(why, "SIG", 3) == 0 ? "; a second signal stops them now" : "");
    }
    uv_timer_start(&fm->grace_timer, on_grace, (uint64_t)fm->cfg->grace_ms, 0);
  }
  if (fast && fm->stopping < 2) {
    fm->stopping = 2;
    if (why != NULL)
      fm_logp(FM_WARNING, "stopping_now",
              "stopping now (%s): killing %zu running jobs (they go back to the "
              "queue)",
              why, fm->running.n);
    for (struct fm_job *j = fm->running.head; j != NULL; j = j->next)
      kill_job(fm, j, FM_KILL_STOP, 1);
    if (fm->workers != NULL) fm_workers_terminate(fm, 1);
    fm->grace_over = 1;
  }
  fm_maybe_finish(fm);
}

static void on_signal(uv_signal_t *s, int sig) {
  struct fm *fm = s->data;
  char name[FM_SIG_BUF];
  begin_stop(fm, fm->stopping != 0, fm_signame(name, sig));
}

/* ---------------------------------------------------------------- running the foreman */

/* Descriptors the foreman inherited must not reach its jobs. */
static void cloexec_inherited(void) {
  DIR *d = opendir("/proc/self/fd");
  if (d == NULL) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char *end;
    long fd = strtol(e->d_name, &end, 10);
    if (*end != '\0' || fd < 3 || fd == dirfd(d)) continue;
    int flags = fcntl((int)fd, F_GETFD);
    if (flags >= 0) fcntl((int)fd, F_SETFD, flags | FD_CLOEXEC);
  }
  closedir(d);
}

int fm_run(const struct fm_config *cfg) {
  fm_log_setup(cfg->log_times, cfg->log_json);
  struct fm *fm = fm_xmalloc(sizeof *fm);
  memset(fm, 0, sizeof *fm);
  uv_loop_t loop;
  cloexec_inherited();
  /* A job runs as the foreman's user (without --user): non-dumpable, the
   * foreman's /proc/PID/environ and memory are not the job's to read. */
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  signal(SIGPIPE, SIG_IGN);
  if (uv_loop_init(&loop) != 0) {
    fm_logp(FM_ERR, "start_failed", "cannot start the event loop");
    free(fm);
    return 1;
  }
  fm->cfg = cfg;
  fm->loop = &loop;
  fm->gen = 1;
  fm->started_ms = fm_now_ms();
  fm->poll_ms = POLL_MIN_MS;
  fm->poll_cap_ms = cfg->poll_ms;
  fm->prefetch = cfg->prefetch;
  fm->seen.receipts = fm_xmalloc(FM_STATE_RECEIPTS * sizeof *fm->seen.receipts);
  fm_env_init(&fm->env, environ, cfg->url);
  if (fm_exec_init(fm) != 0) {
    fm_exec_release(fm);
    fm_env_release(&fm->env);
    uv_loop_close(&loop);
    free(fm);
    return 1;
  }
  uv_timer_t *timers[] = {&fm->beat_timer,      &fm->lease_timer, &fm->poll_timer,
                          &fm->reconnect_timer, &fm->grace_timer, &fm->hold_timer};
  for (size_t i = 0; i < sizeof timers / sizeof timers[0]; i++) {
    uv_timer_init(&loop, timers[i]);
    timers[i]->data = fm;
  }
  uv_signal_t *sigs[] = {&fm->sig_term, &fm->sig_int, &fm->sig_hup};
  int signums[] = {SIGTERM, SIGINT, SIGHUP};
  for (size_t i = 0; i < 3; i++) {
    uv_signal_init(&loop, sigs[i]);
    sigs[i]->data = fm;
    uv_signal_start(sigs[i], on_signal, signums[i]);
  }
  fm_acker_init(fm);
  fm_guard_start(fm);
  fm_notify_start(fm);
  int rc = fm_db_start(fm, 0);
  if (rc != 0) {
    fm_logp(FM_ERR, "start_failed", "cannot start the database thread: %s",
            uv_strerror(rc));
    fm->status = 1;
    fm->stopping = 2;
    finish(fm);
  } else {
    if (cfg->persistent) fm_workers_init(fm);
    connect_db(fm);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  int status = fm->status;
  fm_workers_free(fm);
  fm_env_release(&fm->env);
  fm_exec_release(fm);
  for (int i = 0; i < FM_CONN_MAX; i++) free(fm->lanes[i].started);
  free(fm->seen.receipts);
  if (uv_loop_close(&loop) != 0)
    fm_logp(FM_WARNING, "loop_not_closed", "the event loop did not close cleanly");
  free(fm);
  return status;
}
