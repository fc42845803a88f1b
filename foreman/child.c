/*
 * child.c - one process per job.  The command runs with argv only (no
 * shell), in its own process group and a session of its own (the exec
 * helper's, where the helper starts it in its cgroup and waits for it),
 * in a cgroup of its own where the foreman can make one (cgroup.c), with
 * the scrubbed environment plus the job's variables (env.c) and no
 * descriptor but its three standard ones.  Its stdin is a sealed memory
 * file that holds the whole payload before the process is even forked
 * (see "the payload" below); stdout is kept up to the largest result,
 * and a job that writes more is stopped at once; the tail of stderr is
 * kept for the error text.
 * The run is over when the process has exited and both pipes are at end
 * of file (or a second after the exit, if some escaped descendant still
 * holds them); what is left of its process group and cgroup is then
 * killed.  The exit decides the outcome: 0 done with stdout as the
 * result, 75 retry later, anything else or a signal failed.  A timeout, a
 * cancel or a stop sends SIGTERM to the group and the rest of the cgroup,
 * then SIGKILL after the kill delay, and the reason decides the outcome
 * instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fm.h"

#define DRAIN_MS 1000   /* how long pipes may stay open after the exit */
#define EX_TEMPFAIL 75

enum timer_use { T_NONE, T_TIMEOUT, T_ESCALATE, T_DRAIN };

struct child {
  struct fm *fm;
  struct fm_job *job;
  uv_process_t proc;
  struct fm_cgroup *cg;  /* its cgroup, or NULL */
  uv_pipe_t out, err;
  uv_timer_t timer;
  enum timer_use timer_use;
  struct fm_capture result;
  struct fm_tail tail;
  int pid;
  int handles;        /* open libuv handles; freed at 0 */
  int out_open, err_open, exited, reported, term_sent;
  int64_t status;
  int sig;
};

/* One buffer for every read: libuv reads into it and the callback copies
 * out before the next read. */
static char read_buf[64 * 1024];

static void on_alloc(uv_handle_t *h, size_t size, uv_buf_t *buf) {
  (void)h;
  (void)size;
  *buf = uv_buf_init(read_buf, sizeof read_buf);
}

static void on_closed(uv_handle_t *h) {
  struct child *c = h->data;
  if (--c->handles == 0) {
    fm_capture_release(&c->result);
    free(c);
  }
}

static void close_handle(struct child *c, uv_handle_t *h) {
  if (!uv_is_closing(h)) uv_close(h, on_closed);
  (void)c;
}

/* The job's process group and, where it has one, its whole cgroup. */
static void kill_group(struct child *c, int sig) {
  if (c->pid > 0) fm_signal_job(c->cg, c->pid, sig);
}

/* ---------------------------------------------------------------- the outcome */

static void outcome_of(struct child *c, struct fm_outcome *out) {
  struct fm *fm = c->fm;
  char what[128], name[FM_SIG_BUF], size[32];
  memset(out, 0, sizeof *out);
  out->retry_in_ms = -1;
  if (c->sig)
    snprintf(what, sizeof what, "killed by %s", fm_signame(name, c->sig));
  else
    snprintf(what, sizeof what, "exit status %lld", (long long)c->status);
  if (c->job->kill != FM_KILL_NONE) {
    fm_killed_outcome(fm, c->job, &c->tail, what, out);
    return;
  }
  if (c->result.over) {
    snprintf(size, sizeof size, "%zu", fm->cfg->max_output);
    char over[256];
    snprintf(over, sizeof over,
             "output over the limit of %s bytes (--max-output), %s", size, what);
    out->kind = JOBQ_ACK_FAIL;
    out->data = fm_error_text(over, &c->tail, &out->len);
    out->word = "failed";
    return;
  }
  if (!c->sig && c->status == 0) {
    out->kind = JOBQ_ACK_COMPLETE;
    out->data = fm_capture_take(&c->result, &out->len);
    out->word = "done";
    return;
  }
  if (!c->sig && c->status == EX_TEMPFAIL) {
    out->kind = JOBQ_ACK_RETRY;
    out->data = fm_error_text("retry requested (exit status 75)", &c->tail,
                              &out->len);
    out->word = "retry";
    return;
  }
  out->kind = JOBQ_ACK_FAIL;
  out->data = fm_error_text(what, &c->tail, &out->len);
  out->word = "failed";
}

/* Reports the run once the process is gone and the pipes are read. */
static void maybe_report(struct child *c) {
  if (c->reported || !c->exited || c->out_open || c->err_open) return;
  c->reported = 1;
  if (c->timer_use != T_NONE) uv_timer_stop(&c->timer);
  c->timer_use = T_NONE;
  struct fm_outcome out;
  outcome_of(c, &out);
  struct fm *fm = c->fm;
  struct fm_job *job = c->job;
  c->job = NULL;
  job->runner = NULL;
  close_handle(c, (uv_handle_t *)&c->timer);
  close_handle(c, (uv_handle_t *)&c->proc);
  fm_cgroup_put(fm, c->cg);
  c->cg = NULL;
  fm_job_finished(fm, job, &out);
}

/* ---------------------------------------------------------------- events */

static void terminate(struct child *c);

static void on_out(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  struct child *c = s->data;
  if (n > 0) {
    fm_capture_add(&c->result, buf->base, (size_t)n);
    if (c->result.over) {
      /* Past --max-output the job has failed whatever it does next: stop
       * reading (its next writes fail) and stop it now, not when it is
       * done. */
      c->out_open = 0;
      close_handle(c, (uv_handle_t *)&c->out);
      terminate(c);
    }
    return;
  }
  if (n == 0) return;
  c->out_open = 0;
  close_handle(c, (uv_handle_t *)&c->out);
  maybe_report(c);
}

static void on_err(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  struct child *c = s->data;
  if (n > 0) {
    fm_tail_add(&c->tail, buf->base, (size_t)n);
    return;
  }
  if (n == 0) return;
  c->err_open = 0;
  close_handle(c, (uv_handle_t *)&c->err);
  maybe_report(c);
}

static void on_timer(uv_timer_t *t) {
  struct child *c = t->data;
  struct fm *fm = c->fm;
  enum timer_use use = c->timer_use;
  c->timer_use = T_NONE;
  switch (use) {
    case T_TIMEOUT:
      fm_child_kill(fm, c->job, FM_KILL_TIMEOUT, 0);
      break;
    case T_ESCALATE:
      kill_group(c, SIGKILL);
      break;
    case T_DRAIN:
      /* Something that escaped the group holds the pipes: stop reading. */
      if (c->out_open) {
        c->out_open = 0;
        close_handle(c, (uv_handle_t *)&c->out);
      }
      if (c->err_open) {
        c->err_open = 0;
        close_handle(c, (uv_handle_t *)&c->err);
      }
      maybe_report(c);
      break;
    case T_NONE:
      break;
  }
}

static void on_child_exit(uv_process_t *p, int64_t status, int sig) {
  struct child *c = p->data;
  c->exited = 1;
  c->status = status;
  c->sig = sig;
  /* Whatever the job left running in its group goes with it. */
  kill_group(c, SIGKILL);
  fm_guard_forget(c->fm, c->pid);
  if (c->timer_use != T_NONE) uv_timer_stop(&c->timer);
  c->timer_use = T_NONE;
  if (c->out_open || c->err_open) {
    c->timer_use = T_DRAIN;
    uv_timer_start(&c->timer, on_timer, DRAIN_MS, 0);
  }
  maybe_report(c);
}

/* ---------------------------------------------------------------- the payload */

/*
 * A job's command starts only once its whole payload is in hand: the
 * foreman writes the payload into a new memory file (memfd), checks that
 * the file holds all of it, seals it against any change and only then
 * spawns the process, with the file as its stdin, read from the start.
 * Wherever the foreman dies, no command runs on a partial payload:
 *
 *   - while it fills the file (failpoint job.payload): no process exists
 *     yet; the file dies with the foreman and the job comes back after
 *     the lease, whole;
 *   - between fork and exec: the child already holds the whole file as
 *     its stdin; the exec helper (jobq-exec.c) sees the foreman gone and
 *     exits without running the command, or the parent-death signal
 *     kills it;
 *   - after exec (failpoint job.spawned): the command reads its whole
 *     payload from the file, which nothing can change or cut, until the
 *     parent-death signal, the guard or its cgroup's end stops it.
 *
 * No pipe is written after the fork, so there is no write for a death to
 * interrupt.  It costs a memfd_create, a write and two fcntls per job
 * (microseconds); the file's pages go when the job's last process
 * closes its stdin.
 */

/* Writes all of data at offset off; 0, or -1 with errno. */
static int put_all(int fd, const char *data, size_t len, off_t off) {
  while (len > 0) {
    ssize_t n = pwrite(fd, data, len, off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    data += n;
    len -= (size_t)n;
    off += n;
  }
  return 0;
}

/* The sealed memory file holding job's whole payload, its offset at 0;
 * or -1 with errno set (nothing is left open). */
static int payload_file(const jobq_job *job) {
  int fd = memfd_create("jobq-payload", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  const char *p = job->payload;
  size_t len = job->payload_len, half = len / 2;
  struct stat st;
  int ok = put_all(fd, p, half, 0) == 0;
  if (ok) fm_failpoint("job.payload");
  ok = ok && put_all(fd, p + half, len - half, (off_t)half) == 0;
  ok = ok && fstat(fd, &st) == 0;
  if (ok && (size_t)st.st_size != len) {
    errno = EIO; /* cannot happen: the file is ours alone */
    ok = 0;
  }
  ok = ok && fcntl(fd, F_ADD_SEALS,
                   F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == 0;
  if (!ok) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

/* ---------------------------------------------------------------- start and stop */

/*
 * What jobs and workers are spawned as: "jobq-exec [-u UID:GID:GROUPS]
 * PPID FILE COMMAND ARGS..." when the helper sits beside the jobq binary
 * (as `make` builds and installs it), with "-g CGROUP" (or "-m CGROUP",
 * fm_cgroup_flag) put in for each job that has a cgroup; else FILE with
 * COMMAND ARGS... directly, with a warning.  FILE was found in PATH once,
 * at the start, not for each job.
 * With --user, jobs also get the user's HOME, USER and LOGNAME.
 */
int fm_exec_init(struct fm *fm) {
  const struct fm_config *cfg = fm->cfg;
  size_t n = 0;
  while (cfg->argv[n] != NULL) n++;
  fm->exec_argv = fm_xmalloc((n + 6) * sizeof *fm->exec_argv);
  char self[4096];
  size_t len = sizeof self;
  char *helper = NULL;
  if (uv_exepath(self, &len) == 0) {
    char *slash = strrchr(self, '/');
    if (slash != NULL) {
      *slash = '\0';
      size_t size = strlen(self) + sizeof "/jobq-exec";
      helper = fm_xmalloc(size);
      snprintf(helper, size, "%s/jobq-exec", self);
      if (access(helper, X_OK) != 0) {
        free(helper);
        helper = NULL;
      }
    }
  }
  if (helper == NULL) {
    if (cfg->user != NULL) {
      fm_logp(FM_ERR, "start_failed",
              "cannot run jobs as %s: no jobq-exec beside the jobq binary",
              cfg->user->name);
      return -1;
    }
    fm_logp(FM_WARNING, "no_exec_helper",
            "no jobq-exec beside the jobq binary: jobs start without the "
            "parent-death signal and without cgroups (the guard still stops "
            "them)");
    fm->exec_file = cfg->file;
    memcpy(fm->exec_argv, cfg->argv, (n + 1) * sizeof *fm->exec_argv);
    fm->exec_argc = n;
    return 0;
  }
  char ppid[32];
  snprintf(ppid, sizeof ppid, "%d", (int)getpid());
  size_t a = 0;
  fm->exec_file = helper;
  fm->exec_argv[a++] = helper;
  if (cfg->user != NULL) {
    fm->exec_argv[a++] = "-u";
    fm->exec_argv[a++] = cfg->user->arg;
    fm_env_set(&fm->env, "HOME", cfg->user->home);
    fm_env_set(&fm->env, "USER", cfg->user->name);
    fm_env_set(&fm->env, "LOGNAME", cfg->user->name);
  }
  fm->exec_argv[a++] = fm_xstrdup(ppid);
  fm->exec_argv[a++] = (char *)cfg->file;
  memcpy(fm->exec_argv + a, cfg->argv, (n + 1) * sizeof *fm->exec_argv);
  fm->exec_argc = a + n;
  fm->exec_helper = 1;
  if (!cfg->no_cgroups) fm_cgroup_init(fm);
  return 0;
}

void fm_exec_release(struct fm *fm) {
  if (fm->exec_helper) {
    free(fm->exec_argv[0]);
    free(fm->exec_argv[fm->cfg->user != NULL ? 3 : 1]);
  }
  free(fm->exec_argv);
}

int fm_spawn(struct fm *fm, uv_process_t *proc, struct fm_cgroup *cg, int in_fd,
             uv_pipe_t *in, uv_pipe_t *out, uv_pipe_t *err, char **env,
             uv_exit_cb on_exit_cb) {
  uv_stdio_container_t stdio[3];
  if (in_fd >= 0) {
    stdio[0].flags = UV_INHERIT_FD;
    stdio[0].data.fd = in_fd;
  } else {
    stdio[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
    stdio[0].data.stream = (uv_stream_t *)in;
  }
  stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
  stdio[1].data.stream = (uv_stream_t *)out;
  stdio[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
  stdio[2].data.stream = (uv_stream_t *)err;
  /* "jobq-exec -g CGROUP ..." (or -m) for a job with a cgroup. */
  char **args = fm->exec_argv;
  if (cg != NULL) {
    args = fm_xmalloc((fm->exec_argc + 3) * sizeof *args);
    args[0] = fm->exec_argv[0];
    args[1] = (char *)fm_cgroup_flag(fm);
    args[2] = (char *)fm_cgroup_dir(cg);
    memcpy(args + 3, fm->exec_argv + 1, fm->exec_argc * sizeof *args);
  }
  uv_process_options_t o;
  memset(&o, 0, sizeof o);
  o.file = fm->exec_file; /* the exec helper, or the command itself */
  o.args = args;
  o.env = env;
  o.flags = UV_PROCESS_DETACHED; /* setsid(): its own session and group */
  o.stdio_count = 3;
  o.stdio = stdio;
  o.exit_cb = on_exit_cb;
  int rc = uv_spawn(fm->loop, proc, &o);
  if (args != fm->exec_argv) free(args);
  return rc;
}

int fm_child_start(struct fm *fm, struct fm_job *job) {
  const struct fm_config *cfg = fm->cfg;
  int in_fd = payload_file(&job->job);
  if (in_fd < 0) return uv_translate_sys_error(errno);
  struct child *c = fm_xmalloc(sizeof *c);
  memset(c, 0, sizeof *c);
  c->fm = fm;
  c->job = job;
  fm_capture_init(&c->result, cfg->max_output);
  uv_pipe_init(fm->loop, &c->out, 0);
  uv_pipe_init(fm->loop, &c->err, 0);
  uv_timer_init(fm->loop, &c->timer);
  c->out.data = c->err.data = c->timer.data = c->proc.data = c;
  c->handles = 4;

  struct fm_envp env;
  fm_env_job(&fm->env, &job->job, &env);
  c->cg = fm_cgroup_get(fm);
  int rc = fm_spawn(fm, &c->proc, c->cg, in_fd, NULL, &c->out, &c->err,
                    env.vars, on_child_exit);
  fm_envp_release(&env);
  close(in_fd); /* the child has its own */
  if (rc != 0) {
    fm_cgroup_put(fm, c->cg);
    c->cg = NULL;
    c->job = NULL;
    close_handle(c, (uv_handle_t *)&c->out);
    close_handle(c, (uv_handle_t *)&c->err);
    close_handle(c, (uv_handle_t *)&c->timer);
    close_handle(c, (uv_handle_t *)&c->proc);
    return rc;
  }
  c->pid = c->proc.pid;
  fm_guard_watch(fm, c->pid);
  fm_failpoint("job.spawned");
  /* The payload is the child's now: the foreman's copy is not needed. */
  free(job->job.payload);
  job->job.payload = NULL;
  job->runner = c;
  c->out_open = c->err_open = 1;
  uv_read_start((uv_stream_t *)&c->out, on_alloc, on_out);
  uv_read_start((uv_stream_t *)&c->err, on_alloc, on_err);
  if (job->timeout_ms > 0) {
    c->timer_use = T_TIMEOUT;
    uv_timer_start(&c->timer, on_timer, (uint64_t)job->timeout_ms, 0);
  }
  return 0;
}
/* SIGTERM to the job's group, then SIGKILL after the kill delay. */
static void terminate(struct child *c) {
  if (c->exited || c->term_sent) return;
  c->term_sent = 1;
  kill_group(c, SIGTERM);
  if (c->timer_use != T_NONE) uv_timer_stop(&c->timer);
  c->timer_use = T_ESCALATE;
  uv_timer_start(&c->timer, on_timer, (uint64_t)c->fm->cfg->kill_after_ms, 0);
}

void fm_child_kill(struct fm *fm, struct fm_job *job, enum fm_kill why,
                   int hard) {
  struct child *c = job->runner;
  (void)fm;
  if (c == NULL) return;
  /* The first reason stands, except that a lost session records nothing
   * whatever the reason was. */
  if (job->kill == FM_KILL_NONE || why == FM_KILL_LOST) job->kill = why;
  if (c->exited) return;
  if (hard)
    kill_group(c, SIGKILL);
  else
    terminate(c);
}
