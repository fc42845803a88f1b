/*
 * persist.c - persistent workers: `jobq work --persistent` starts
 * CONCURRENCY long-lived processes of the command and feeds them jobs
 * over the line protocol (proto.c, docs/worker-protocol.md), one job at a
 * time per worker, so that small jobs in any language cost no fork.
 *
 * Each worker runs in its own process group, with the scrubbed
 * environment plus JOBQ_WORKER and JOBQ_PROTOCOL.  It gets no job before
 * it has written "ready" (so a worker that cannot start costs no job an
 * attempt); then the foreman writes one "job" line to an idle worker and
 * waits for one reply line.  A worker
 * that writes anything else, or a reply for another job, or a line that
 * is too long, is killed at once and its job failed with the reason.  A
 * worker that runs past the job's timeout, or whose job is cancelled, gets
 * SIGTERM, then SIGKILL, and is replaced; so is a worker that exits.  A
 * worker that keeps dying young is restarted after a growing delay (up to
 * 30 s) so that a broken command does not spin.  On stop, every worker's
 * stdin is closed: a worker finishes the job it has, sees end of file and
 * exits.  One that has no job (any more) and has not exited a second
 * later gets SIGTERM, then SIGKILL: the grace is for jobs, not for idle
 * workers.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm.h"

#define DRAIN_MS 1000
#define YOUNG_MS 1000           /* dying younger than this is a crash loop */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 30000
#define TEXT_MAX (64 * 1024)    /* the longest error or reason read */
#define READY_WARN_MS 10000     /* when a silent new worker is worth a line */
#define IDLE_EXIT_MS 1000       /* how long a worker without a job has to
                                   exit on end of input when stopping */

enum wstate { W_DOWN, W_STARTING, W_IDLE, W_BUSY };
enum timer_use { T_NONE, T_READY, T_TIMEOUT, T_IDLE_EXIT, T_ESCALATE, T_DRAIN };

struct worker {
  struct fm *fm;
  int index;                    /* 1-based */
  enum wstate state;
  /* One set of handles per process; set up again for each restart once
   * all are closed. */
  uv_process_t proc;
  struct fm_cgroup *cg;         /* its cgroup, or NULL */
  uv_pipe_t in, out, err;
  uv_timer_t timer;
  enum timer_use timer_use;
  int handles;
  int pid;
  int in_open, out_open, err_open, exited, broken, term_sent;
  int64_t status;
  int sig;
  int64_t started_ms;
  int was_ready;                /* it wrote "ready" */
  struct fm_job *job;
  char *line;                   /* stdout not yet a whole line */
  size_t len, cap;
  struct fm_tail tail;
  /* The worker's for the whole run. */
  uv_timer_t restart;
  int64_t backoff_ms;
};

struct fm_workers {
  struct worker *w;
  int n;
  int stopping;
  size_t max_line, max_data;
};

static char read_buf[64 * 1024];

static void on_alloc(uv_handle_t *h, size_t size, uv_buf_t *buf) {
  (void)h;
  (void)size;
  *buf = uv_buf_init(read_buf, sizeof read_buf);
}

/* The worker's process group and, where it has one, its whole cgroup. */
static void kill_group(struct worker *w, int sig) {
  if (w->pid > 0 && !w->exited) fm_signal_job(w->cg, w->pid, sig);
}

static void spawn(struct worker *w);
static void stop_idle(struct worker *w);

static void on_restart(uv_timer_t *t) {
  struct worker *w = t->data;
  if (!w->fm->workers->stopping && !w->fm->closed) spawn(w);
}

/* All of a process's handles are closed: start the next one. */
static void on_closed(uv_handle_t *h) {
  struct worker *w = h->data;
  if (--w->handles > 0) return;
  struct fm *fm = w->fm;
  if (fm->workers->stopping || fm->closed) {
    fm_maybe_finish(fm);
    return;
  }
  int64_t lived = fm_now_ms() - w->started_ms;
  if (!w->was_ready || lived < YOUNG_MS)
    w->backoff_ms = w->backoff_ms == 0 ? BACKOFF_MIN_MS : w->backoff_ms * 2;
  else
    w->backoff_ms = 0;
  if (w->backoff_ms > BACKOFF_MAX_MS) w->backoff_ms = BACKOFF_MAX_MS;
  uv_timer_start(&w->restart, on_restart, (uint64_t)fm_jitter(w->backoff_ms, 20), 0);
}

static void close_handle(uv_handle_t *h) {
  if (!uv_is_closing(h)) uv_close(h, on_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  (void)status;
  close_handle((uv_handle_t *)req->handle);
  free(req);
}

/* End of file on the worker's stdin, after what was written. */
static void close_stdin(struct worker *w) {
  if (!w->in_open) return;
  w->in_open = 0;
  uv_shutdown_t *req = fm_xmalloc(sizeof *req);
  if (uv_shutdown(req, (uv_stream_t *)&w->in, on_shutdown) != 0) {
    free(req);
    close_handle((uv_handle_t *)&w->in);
  }
}

/* ---------------------------------------------------------------- a process's end */

static const char *exit_text(char *buf, size_t size, const struct worker *w) {
  char name[FM_SIG_BUF];
  if (w->sig)
    snprintf(buf, size, "killed by %s", fm_signame(name, w->sig));
  else
    snprintf(buf, size, "exit status %lld", (long long)w->status);
  return buf;
}

/* The process is gone and its output read: settle its job, close up. */
static void maybe_end(struct worker *w) {
  if (!w->exited || w->out_open || w->err_open || w->state == W_DOWN) return;
  struct fm *fm = w->fm;
  struct fm_job *job = w->job;
  char how[64];
  exit_text(how, sizeof how, w);
  int quiet = w->broken || fm->workers->stopping ||
              (job != NULL && job->kill != FM_KILL_NONE);
  w->state = W_DOWN;
  w->job = NULL;
  if (w->timer_use != T_NONE) uv_timer_stop(&w->timer);
  w->timer_use = T_NONE;
  if (w->in_open) {
    w->in_open = 0;
    close_handle((uv_handle_t *)&w->in);
  }
  close_handle((uv_handle_t *)&w->timer);
  close_handle((uv_handle_t *)&w->proc);
  if (!quiet) {
    size_t len;
    char what[128];
    snprintf(what, sizeof what, "worker %d (pid %d) ended with %s%s", w->index,
             w->pid, how,
             job != NULL     ? " while running a job"
             : !w->was_ready ? " before it was ready"
                             : "");
    char *text = fm_error_text(what, &w->tail, &len);
    fm_log("%s", text);
    free(text);
  }
  if (job != NULL) {
    struct fm_outcome out;
    job->runner = NULL;
    if (job->kill != FM_KILL_NONE) {
      fm_killed_outcome(fm, job, &w->tail, how, &out);
    } else {
      char what[128];
      memset(&out, 0, sizeof out);
      snprintf(what, sizeof what, "the worker ended with %s while running the job",
               how);
      out.kind = JOBQ_ACK_FAIL;
      out.retry_in_ms = -1;
      out.word = "failed";
      out.data = fm_error_text(what, &w->tail, &out.len);
    }
    fm_job_finished(fm, job, &out);
  }
  fm_maybe_finish(fm);
}

static void protocol_error(struct worker *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Kills a worker that broke the protocol; its job fails with why. */
static void protocol_error(struct worker *w, const char *fmt, ...) {
  char why[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  if (w->broken) return;
  w->broken = 1;
  fm_logp(FM_WARNING, "worker_protocol",
          "worker %d (pid %d) broke the protocol: %s: killing it and starting "
          "another",
          w->index, w->pid, why);
  if (w->job != NULL) {
    if (w->job->kill == FM_KILL_NONE) {
      w->job->kill = FM_KILL_PROTOCOL;
      free(w->job->kill_note);
      w->job->kill_note = fm_xstrdup(why);
    }
  }
  kill_group(w, SIGKILL);
}

/* ---------------------------------------------------------------- replies */

static void handle_line(struct worker *w, const char *line, size_t len) {
  struct fm *fm = w->fm;
  char shown[FM_QUOTE_BUF], why[256];
  if (w->state == W_STARTING) {
    if (!fm_proto_ready(line, len)) {
      protocol_error(w, "expected 'ready' first, got '%s'", fm_quote(shown, line, len));
      return;
    }
    if (w->timer_use == T_READY) {
      uv_timer_stop(&w->timer);
      w->timer_use = T_NONE;
    }
    w->state = W_IDLE;
    w->was_ready = 1;
    if (fm->cfg->verbose) fm_log("worker %d (pid %d) is ready", w->index, w->pid);
    fm_kick(fm);
    return;
  }
  if (w->state != W_BUSY || w->job == NULL) {
    protocol_error(w, "a line while it had no job: '%s'",
                   fm_quote(shown, line, len));
    return;
  }
  struct fm_job *job = w->job;
  struct fm_reply r;
  int rc = fm_proto_reply(line, len, fm->workers->max_data, &r, why, sizeof why);
  if (rc == -1) {
    protocol_error(w, "%s, got '%s'", why, fm_quote(shown, line, len));
    return;
  }
  if (rc == 0 && r.id != job->job.id) {
    protocol_error(w, "a reply for job %lld while it had job %lld: '%s'",
                   (long long)r.id, (long long)job->job.id,
                   fm_quote(shown, line, len));
    free(r.data);
    return;
  }
  if (job->kill != FM_KILL_NONE) {
    /* Being stopped on purpose: the reason decides, at its exit. */
    free(r.data);
    return;
  }
  struct fm_outcome out;
  memset(&out, 0, sizeof out);
  out.retry_in_ms = -1;
  if (rc == -2 || (r.kind == FM_REPLY_DONE && r.len > fm->cfg->max_output)) {
    char text[300];
    if (rc == 0)
      snprintf(why, sizeof why, "the result of %zu bytes is over the limit of %zu bytes",
               r.len, fm->cfg->max_output);
    snprintf(text, sizeof text, "%s (--max-output)", why);
    free(r.data);
    out.kind = JOBQ_ACK_FAIL;
    out.data = fm_xstrdup(text);
    out.len = strlen(text);
    out.word = "failed";
  } else {
    out.data = r.data;
    out.len = r.len;
    switch (r.kind) {
      case FM_REPLY_DONE:
        out.kind = JOBQ_ACK_COMPLETE;
        out.word = "done";
        break;
      case FM_REPLY_FAIL:
        out.kind = JOBQ_ACK_FAIL;
        out.word = "failed";
        if (out.data == NULL) {
          out.data = fm_xstrdup("the worker failed the job without a reason");
          out.len = strlen(out.data);
        }
        break;
      case FM_REPLY_RETRY:
        out.kind = JOBQ_ACK_RETRY;
        out.word = "retry";
        out.retry_in_ms = r.delay_ms;
        break;
    }
  }
  if (w->timer_use != T_NONE) uv_timer_stop(&w->timer);
  w->timer_use = T_NONE;
  w->state = W_IDLE;
  w->job = NULL;
  job->runner = NULL;
  w->backoff_ms = 0; /* it works */
  fm_job_finished(fm, job, &out);
  if (fm->workers->stopping) stop_idle(w);
}

static void on_out(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  struct worker *w = s->data;
  struct fm_workers *ws = w->fm->workers;
  if (n < 0) {
    char shown[FM_QUOTE_BUF];
    if (w->len > 0 && !w->broken)
      protocol_error(w, "a last line without a newline: '%s'",
                     fm_quote(shown, w->line, w->len));
    w->len = 0;
    w->out_open = 0;
    close_handle((uv_handle_t *)&w->out);
    maybe_end(w);
    return;
  }
  const char *p = buf->base;
  size_t left = (size_t)n;
  while (left > 0 && !w->broken) {
    const char *nl = memchr(p, '\n', left);
    size_t take = nl != NULL ? (size_t)(nl - p) : left;
    if (w->len + take > ws->max_line) {
      protocol_error(w, "a line longer than %zu bytes (the largest reply for "
                     "--max-output)",
                     ws->max_line);
      break;
    }
    if (w->len + take > w->cap) {
      size_t cap = w->cap ? w->cap : 256;
      while (cap < w->len + take) cap *= 2;
      w->line = fm_xrealloc(w->line, cap);
      w->cap = cap;
    }
    memcpy(w->line + w->len, p, take);
    w->len += take;
    if (nl == NULL) break;
    size_t len = w->len;
    w->len = 0;
    handle_line(w, w->line, len);
    p = nl + 1;
    left -= take + 1;
  }
}

static void on_err(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  struct worker *w = s->data;
  if (n > 0) {
    fm_tail_add(&w->tail, buf->base, (size_t)n);
    return;
  }
  if (n == 0) return;
  w->err_open = 0;
  close_handle((uv_handle_t *)&w->err);
  maybe_end(w);
}

static void on_timer(uv_timer_t *t);

/* SIGTERM to the worker's group, then SIGKILL after the kill delay. */
static void terminate(struct worker *w) {
  if (w->exited || w->term_sent) return;
  w->term_sent = 1;
  kill_group(w, SIGTERM);
  if (w->timer_use != T_NONE) uv_timer_stop(&w->timer);
  w->timer_use = T_ESCALATE;
  uv_timer_start(&w->timer, on_timer, (uint64_t)w->fm->cfg->kill_after_ms, 0);
}

/* The foreman is stopping and w has no job: its stdin is closed, and if
 * it has not exited in IDLE_EXIT_MS it is terminated.  Nothing of the
 * grace is for it: the grace is for jobs. */
static void stop_idle(struct worker *w) {
  if (w->exited || w->term_sent || w->job != NULL) return;
  if (w->timer_use != T_NONE) uv_timer_stop(&w->timer);
  w->timer_use = T_IDLE_EXIT;
  uv_timer_start(&w->timer, on_timer, IDLE_EXIT_MS, 0);
}

static void on_timer(uv_timer_t *t) {
  struct worker *w = t->data;
  enum timer_use use = w->timer_use;
  w->timer_use = T_NONE;
  char d[FM_DUR_BUF];
  switch (use) {
    case T_READY:
      fm_logp(FM_WARNING, "worker_not_ready",
              "worker %d (pid %d) has not written 'ready' after %s: it gets no "
              "jobs until it does (docs/worker-protocol.md)",
              w->index, w->pid, fm_fmt_ms(d, READY_WARN_MS));
      break;
    case T_TIMEOUT:
      fm_logp(FM_WARNING, "job_timeout",
              "worker %d (pid %d) ran job %lld past its timeout of %s: "
              "replacing it",
              w->index, w->pid, (long long)w->job->job.id,
              fm_fmt_ms(d, w->job->timeout_ms));
      fm_workers_kill(w->fm, w->job, FM_KILL_TIMEOUT, 0);
      break;
    case T_IDLE_EXIT:
      if (w->fm->cfg->verbose)
        fm_logp(FM_WARNING, "worker_stuck",
                "worker %d (pid %d) did not exit within %s of the end of its "
                "input: terminating it",
                w->index, w->pid, fm_fmt_ms(d, IDLE_EXIT_MS));
      terminate(w);
      break;
    case T_ESCALATE:
      kill_group(w, SIGKILL);
      break;
    case T_DRAIN:
      if (w->out_open) {
        w->out_open = 0;
        close_handle((uv_handle_t *)&w->out);
      }
      if (w->err_open) {
        w->err_open = 0;
        close_handle((uv_handle_t *)&w->err);
      }
      maybe_end(w);
      break;
    case T_NONE:
      break;
  }
}

static void on_worker_exit(uv_process_t *p, int64_t status, int sig) {
  struct worker *w = p->data;
  kill_group(w, SIGKILL); /* what it left running */
  fm_cgroup_put(w->fm, w->cg);
  w->cg = NULL;
  w->exited = 1;
  w->status = status;
  w->sig = sig;
  fm_guard_forget(w->fm, w->pid);
  if (w->timer_use != T_NONE) uv_timer_stop(&w->timer);
  w->timer_use = T_NONE;
  if (w->out_open || w->err_open) {
    w->timer_use = T_DRAIN;
    uv_timer_start(&w->timer, on_timer, DRAIN_MS, 0);
  }
  maybe_end(w);
}

/* ---------------------------------------------------------------- starting */

static void spawn(struct worker *w) {
  struct fm *fm = w->fm;
  uv_pipe_init(fm->loop, &w->in, 0);
  uv_pipe_init(fm->loop, &w->out, 0);
  uv_pipe_init(fm->loop, &w->err, 0);
  uv_timer_init(fm->loop, &w->timer);
  w->in.data = w->out.data = w->err.data = w->timer.data = w->proc.data = w;
  w->handles = 5;
  w->timer_use = T_NONE;
  w->exited = w->broken = w->term_sent = 0;
  w->status = 0;
  w->sig = 0;
  w->len = 0;
  w->pid = 0;
  fm_tail_clear(&w->tail);
  w->started_ms = fm_now_ms();
  w->was_ready = 0;

  struct fm_envp env;
  fm_env_worker(&fm->env, w->index, &env);
  w->cg = fm_cgroup_get(fm);
  int rc = fm_spawn(fm, &w->proc, w->cg, -1, &w->in, &w->out, &w->err,
                    env.vars, on_worker_exit);
  fm_envp_release(&env);
  if (rc != 0) {
    fm_cgroup_put(fm, w->cg);
    w->cg = NULL;
    fm_logp(FM_ERR, "worker_start_failed", "cannot start worker %d: %s", w->index,
            uv_strerror(rc));
    close_handle((uv_handle_t *)&w->in);
    close_handle((uv_handle_t *)&w->out);
    close_handle((uv_handle_t *)&w->err);
    close_handle((uv_handle_t *)&w->timer);
    close_handle((uv_handle_t *)&w->proc);
    return;
  }
  w->pid = w->proc.pid;
  fm_guard_watch(fm, w->pid);
  w->in_open = w->out_open = w->err_open = 1;
  w->state = W_STARTING;
  uv_read_start((uv_stream_t *)&w->out, on_alloc, on_out);
  uv_read_start((uv_stream_t *)&w->err, on_alloc, on_err);
  w->timer_use = T_READY;
  uv_timer_start(&w->timer, on_timer, READY_WARN_MS, 0);
}

int fm_workers_init(struct fm *fm) {
  const struct fm_config *cfg = fm->cfg;
  struct fm_workers *ws = fm_xmalloc(sizeof *ws);
  memset(ws, 0, sizeof *ws);
  ws->n = cfg->concurrency;
  ws->w = fm_xmalloc((size_t)ws->n * sizeof *ws->w);
  memset(ws->w, 0, (size_t)ws->n * sizeof *ws->w);
  ws->max_data = cfg->max_output > TEXT_MAX ? cfg->max_output : TEXT_MAX;
  ws->max_line = fm_proto_max_line(ws->max_data);
  fm->workers = ws;
  for (int i = 0; i < ws->n; i++) {
    struct worker *w = &ws->w[i];
    w->fm = fm;
    w->index = i + 1;
    uv_timer_init(fm->loop, &w->restart);
    w->restart.data = w;
  }
  for (int i = 0; i < ws->n; i++) spawn(&ws->w[i]);
  return 0;
}

/* ---------------------------------------------------------------- jobs */

int fm_workers_up(const struct fm *fm) {
  const struct fm_workers *ws = fm->workers;
  int n = 0;
  for (int i = 0; i < ws->n; i++)
    if ((ws->w[i].state == W_IDLE || ws->w[i].state == W_BUSY) &&
        !ws->w[i].broken && !ws->w[i].exited)
      n++;
  return n;
}

int fm_workers_idle(const struct fm *fm) {
  const struct fm_workers *ws = fm->workers;
  int n = 0;
  for (int i = 0; i < ws->n; i++)
    if (ws->w[i].state == W_IDLE && !ws->w[i].broken && !ws->w[i].exited &&
        ws->w[i].in_open)
      n++;
  return n;
}

struct job_line {
  uv_write_t req;
  char *text;
};

static void on_written(uv_write_t *req, int status) {
  struct job_line *l = req->data;
  (void)status; /* a worker that died is handled by its exit */
  free(l->text);
  free(l);
}

int fm_workers_start(struct fm *fm, struct fm_job *job) {
  struct fm_workers *ws = fm->workers;
  struct worker *w = NULL;
  for (int i = 0; i < ws->n && w == NULL; i++)
    if (ws->w[i].state == W_IDLE && !ws->w[i].broken && !ws->w[i].exited &&
        ws->w[i].in_open)
      w = &ws->w[i];
  if (w == NULL) return UV_EBUSY;
  struct job_line *l = fm_xmalloc(sizeof *l);
  size_t len;
  l->text = fm_proto_job(&job->job, &len);
  l->req.data = l;
  uv_buf_t b = uv_buf_init(l->text, (unsigned)len);
  int rc = uv_write(&l->req, (uv_stream_t *)&w->in, &b, 1, on_written);
  if (rc != 0) {
    free(l->text);
    free(l);
    return rc;
  }
  w->state = W_BUSY;
  w->job = job;
  job->runner = w;
  fm_tail_clear(&w->tail);
  if (job->timeout_ms > 0) {
    w->timer_use = T_TIMEOUT;
    uv_timer_start(&w->timer, on_timer, (uint64_t)job->timeout_ms, 0);
  }
  return 0;
}

void fm_workers_kill(struct fm *fm, struct fm_job *job, enum fm_kill why,
                     int hard) {
  struct worker *w = job->runner;
  if (w == NULL) return;
  if (job->kill == FM_KILL_NONE || why == FM_KILL_LOST) job->kill = why;
  if (w->exited) return;
  if (hard) {
    kill_group(w, SIGKILL);
    return;
  }
  terminate(w);
}

void fm_workers_stop(struct fm *fm) {
  struct fm_workers *ws = fm->workers;
  ws->stopping = 1;
  for (int i = 0; i < ws->n; i++) {
    struct worker *w = &ws->w[i];
    uv_timer_stop(&w->restart);
    if (w->state == W_DOWN) continue;
    close_stdin(w);
    stop_idle(w);
  }
}

void fm_workers_terminate(struct fm *fm, int hard) {
  struct fm_workers *ws = fm->workers;
  for (int i = 0; i < ws->n; i++) {
    struct worker *w = &ws->w[i];
    if (w->state == W_DOWN || w->exited) continue;
    if (w->job != NULL)
      fm_workers_kill(fm, w->job, FM_KILL_STOP, hard);
    else if (hard)
      kill_group(w, SIGKILL);
    else
      terminate(w);
  }
}

int fm_workers_alive(const struct fm *fm) {
  const struct fm_workers *ws = fm->workers;
  int n = 0;
  for (int i = 0; i < ws->n; i++)
    if (ws->w[i].state != W_DOWN || ws->w[i].handles > 0) n++;
  return n;
}

void fm_workers_close(struct fm *fm) {
  struct fm_workers *ws = fm->workers;
  if (ws == NULL) return;
  for (int i = 0; i < ws->n; i++)
    uv_close((uv_handle_t *)&ws->w[i].restart, NULL);
}

void fm_workers_free(struct fm *fm) {
  struct fm_workers *ws = fm->workers;
  if (ws == NULL) return;
  for (int i = 0; i < ws->n; i++) free(ws->w[i].line);
  free(ws->w);
  free(ws);
  fm->workers = NULL;
}
