/*
 * acker.c - acknowledgements in batches.  Each finished job's outcome
 * (done with its result, failed with its error, retry later, or released)
 * waits here at most the ack delay (a few milliseconds) for company, then
 * all that are waiting go to the database thread as one jobq_ack_many():
 * one transaction, one disk flush, for many jobs.  When the foreman wants
 * more jobs, the claim goes with them (jobq_ack_claim), so that a busy
 * foreman commits once per round of work, not twice.  While a batch is with
 * the database, new outcomes gather for the next one, so the busier the
 * foreman, the bigger its batches.  A batch that failed for a temporary
 * reason is sent again after a growing delay (acknowledgements are
 * idempotent: one that had committed returns success again), for as long
 * as the session may be alive, also while it is suspended for want of a
 * heartbeat (foreman.c).  Outcomes of a session that the database says is
 * gone are dropped, never sent: their jobs run again elsewhere.  Each
 * lane (a connection of the foreman's, dbthread.c) has its own batches:
 * a job's outcome goes on the lane that claimed it, whose view of the
 * session holds it, and the lanes' batches commit side by side.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm.h"

#define ACK_MAX 1000            /* most acks in one transaction */
#define RETRY_MIN_MS 50
#define RETRY_MAX_MS 2000

static void free_items(struct fm_pending *items, size_t n) {
  for (size_t i = 0; i < n; i++) free(items[i].data);
  free(items);
}

static void flush(struct fm_acker *a);

static void on_timer(uv_timer_t *t) {
  struct fm_acker *a = t->data;
  a->timer_on = 0;
  flush(a);
}

void fm_acker_init(struct fm *fm) {
  for (int i = 0; i < FM_CONN_MAX; i++) {
    struct fm_acker *a = &fm->acker[i];
    memset(a, 0, sizeof *a);
    a->fm = fm;
    a->lane = i;
    uv_timer_init(fm->loop, &a->timer);
    a->timer.data = a;
  }
}

static void arm(struct fm_acker *a, int64_t ms) {
  if (a->timer_on) return;
  a->timer_on = 1;
  uv_timer_start(&a->timer, on_timer, (uint64_t)(ms < 0 ? 0 : ms), 0);
}

void fm_acker_add(struct fm *fm, const struct fm_job *job,
                  struct fm_outcome *out) {
  struct fm_acker *a = &fm->acker[job->lane];
  if (out->kind == 0 || job->gen != fm->gen) {
    free(out->data);
    out->data = NULL;
    return;
  }
  if (a->n == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 64;
    a->items = fm_xrealloc(a->items, a->cap * sizeof *a->items);
  }
  struct fm_pending *p = &a->items[a->n++];
  jobq_ack_init(&p->ack, &job->job, out->kind);
  p->data = out->data;
  p->ack.data = out->data;
  p->ack.len = out->len;
  p->ack.retry_in_ms = out->retry_in_ms;
  p->gen = job->gen;
  p->job_id = job->job.id;
  snprintf(p->queue, sizeof p->queue, "%s", job->job.queue);
  p->claimed_at_ms = job->job.claimed_at_ms;
  out->data = NULL;
  if (a->n >= ACK_MAX)
    flush(a);
  else if (!a->inflight && a->retry_ms == 0)
    arm(a, fm->cfg->ack_delay_ms);
}

static void on_acked(struct fm *fm, struct fm_op *op);

void fm_acker_flush(struct fm *fm) {
  for (int i = 0; i < FM_CONN_MAX; i++) flush(&fm->acker[i]);
}

size_t fm_acker_pending(const struct fm *fm) {
  size_t n = 0;
  for (int i = 0; i < FM_CONN_MAX; i++) n += fm->acker[i].n;
  return n;
}

static void flush(struct fm_acker *a) {
  struct fm *fm = a->fm;
  /* A session whose lease may have run out is acknowledged under all the
   * same: each acknowledgement is fenced by its claim, and takes effect
   * only if no one reaped the session meanwhile.  A lane that is not
   * joined has nothing of the current session. */
  if (a->inflight || a->n == 0 || !fm->connected ||
      fm->lanes[a->lane].state != FM_LANE_JOINED)
    return;
  if (a->timer_on) {
    uv_timer_stop(&a->timer);
    a->timer_on = 0;
  }
  size_t n = a->n < ACK_MAX ? a->n : ACK_MAX;
  struct fm_op *op = fm_op_new(FM_OP_ACK, fm->gen, on_acked);
  op->lane = a->lane;
  fm->lanes[a->lane].used_ms = fm_now_ms();
  op->acks = fm_xmalloc(n * sizeof *op->acks);
  /* The op borrows the data; the items stay here (the first n) until it
   * is back. */
  for (size_t i = 0; i < n; i++) op->acks[i] = a->items[i].ack;
  op->nacks = n;
  a->inflight = 1;
  a->sent = n;
  /* A claim the foreman wants goes in the same transaction: one commit
   * for both. */
  struct fm_op *claim = fm_claim_op(fm, a->lane);
  if (claim != NULL)
    fm_db_submit_pair(fm, op, claim);
  else
    fm_db_submit(fm, op, 0);
}

/* Removes the first n items (sent and settled). */
static void settle(struct fm_acker *a, size_t n) {
  for (size_t i = 0; i < n; i++) free(a->items[i].data);
  memmove(a->items, a->items + n, (a->n - n) * sizeof *a->items);
  a->n -= n;
}

static const char *kind_word(jobq_ack_kind k) {
  switch (k) {
    case JOBQ_ACK_COMPLETE: return "done";
    case JOBQ_ACK_FAIL: return "failed";
    case JOBQ_ACK_RETRY: return "retry";
    case JOBQ_ACK_RELEASE: return "released";
  }
  return "?";
}

static void on_acked(struct fm *fm, struct fm_op *op) {
  struct fm_acker *a = &fm->acker[op->lane];
  size_t n = op->nacks;
  a->inflight = 0;
  a->sent = 0;
  if (fm->closed) {
    fm_op_free(op);
    return;
  }
  if (op->rc == FM_STALE || op->gen != fm->gen) {
    /* Given up with its session: not recorded (or fenced if it was). */
    fm->lost += (int64_t)n;
    settle(a, n);
    fm_op_free(op);
    fm_maybe_finish(fm);
    return;
  }
  if (op->rc == JOBQ_OK) {
    a->retry_ms = 0;
    for (size_t i = 0; i < n; i++) {
      const jobq_ack *k = &op->acks[i];
      if (k->status == JOBQ_ELOST) {
        fm->lost++;
        fm_logp(FM_WARNING, "outcome_lost",
                "job %lld: its claim was lost before its outcome (%s) was "
                "recorded: the job runs again or already ran elsewhere",
                (long long)k->id, kind_word(k->kind));
        continue;
      }
      if (k->outcome == JOBQ_STATE_DONE) fm_receipt_add(fm, &a->items[i]);
      if (k->outcome == JOBQ_STATE_CANCELLED)
        fm->cancelled++;
      else if (k->kind == JOBQ_ACK_COMPLETE)
        fm->done++;
      else if (k->kind == JOBQ_ACK_FAIL)
        fm->failed++;
      else if (k->kind == JOBQ_ACK_RETRY)
        fm->retried++;
      else
        fm->released++;
    }
    settle(a, n);
    fm_op_free(op);
    /* A commit of ours can make jobs ready (the next of an ordering key, a
     * barrier, an immediate retry).  A watch hears of them as of anyone's
     * (PostgreSQL's NOTIFY reaches our own LISTEN, SQLite's log grows,
     * and jobq_changed() counts them), so only a foreman without one
     * looks at once; with one, a claim after every batch would mostly
     * come back empty, and it still costs a commit that waits for the
     * disk. */
    if (fm->watch == NULL) fm->maybe_work = 1;
    /* The outcomes that waited for this batch go now, before a claim of
     * its own could: the claim goes with them.  (A claim that ran with
     * this batch is already back, see foreman/dbthread.c.) */
    if (a->n > 0) flush(a);
    fm_kick(fm);
    fm_maybe_finish(fm);
    return;
  }
  if (fm_op_expired(fm, op)) return;
  if (op->rc == JOBQ_ETOOBIG || op->rc == JOBQ_EINVAL) {
    /* Not temporary: record the failure to record instead of the result. */
    fm_logp(FM_ERR, "ack_failed",
            "cannot record %zu outcomes: %s: failing the jobs instead", n, op->errmsg);
    for (size_t i = 0; i < n; i++) {
      struct fm_pending *p = &a->items[i];
      if (p->ack.kind != JOBQ_ACK_COMPLETE) continue;
      free(p->data);
      p->data = fm_xstrdup("the result could not be recorded");
      p->ack.kind = JOBQ_ACK_FAIL;
      p->ack.data = p->data;
      p->ack.len = strlen(p->data);
    }
  } else if (a->retry_ms == 0) {
    fm_logp(FM_WARNING, "ack_failed", "cannot record %zu outcomes: %s: trying again", n,
            op->errmsg);
  }
  fm_op_free(op);
  a->retry_ms = a->retry_ms == 0 ? RETRY_MIN_MS : a->retry_ms * 2;
  if (a->retry_ms > RETRY_MAX_MS) a->retry_ms = RETRY_MAX_MS;
  arm(a, fm_jitter(a->retry_ms, 25));
  fm_kick(fm); /* a claim may have waited for this batch */
}

static size_t drop(struct fm_acker *a, uint64_t gen) {
  size_t kept = a->sent, dropped = 0;
  /* The items that are with the database thread stay until it answers
   * (it reads them, or finds them stale). */
  for (size_t i = a->sent; i < a->n; i++) {
    if (a->items[i].gen < gen) {
      free(a->items[i].data);
      dropped++;
    } else {
      a->items[kept++] = a->items[i];
    }
  }
  a->n = kept;
  if (a->n == 0 && a->timer_on) {
    uv_timer_stop(&a->timer);
    a->timer_on = 0;
  }
  a->retry_ms = 0;
  return dropped;
}

size_t fm_acker_drop(struct fm *fm, uint64_t gen) {
  size_t n = 0;
  for (int i = 0; i < FM_CONN_MAX; i++) n += drop(&fm->acker[i], gen);
  return n;
}

int fm_acker_busy(const struct fm *fm) {
  for (int i = 0; i < FM_CONN_MAX; i++)
    if (fm->acker[i].n > 0 || fm->acker[i].inflight) return 1;
  return 0;
}

void fm_acker_close(struct fm *fm) {
  for (int i = 0; i < FM_CONN_MAX; i++) {
    struct fm_acker *a = &fm->acker[i];
    free_items(a->items, a->n);
    a->items = NULL;
    a->n = a->cap = 0;
    uv_close((uv_handle_t *)&a->timer, NULL);
  }
}
