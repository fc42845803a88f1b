/*
 * guard.c - what stops a dead foreman's jobs.
 *
 * Two mechanisms, because each covers what the other cannot.  First, every
 * job and worker starts through the exec helper (jobq-exec.c), which sets
 * the parent-death signal before it execs the command, so a job's first
 * process dies with the foreman however early.  But that signal reaches
 * only that process, not the ones it starts.
 *
 * So, second, the foreman starts a guard from its own binary: `jobq work
 * --internal-guard`, in its own session, ignoring SIGINT, SIGTERM and
 * SIGHUP.  The foreman tells it over a pipe on its stdin which process
 * groups run jobs ("+PID" once uv_spawn has returned, which is before the
 * helper has exec'd the command, so before the command can start anything;
 * "-PID" when the group is gone).  Only the foreman holds the pipe's write
 * end (every descriptor is close-on-exec), so when the foreman ends in any
 * way, even by SIGKILL, the guard reads end of file, sends SIGKILL to every
 * group it still knows, kills the jobs' cgroups as a whole (where jobs
 * have cgroups, cgroup.c: its argument names their directory; there the
 * group it knows is the exec helper's, which started the job in a group
 * of its own) and removes them, and exits.  Persistent workers also see end of file on
 * their stdin.  If the guard itself dies, the foreman starts
 * another and tells it every group again.
 *
 * Without the helper (jobq-exec missing beside the jobq binary), the guard
 * alone covers all but the time from fork to exec of each job.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fm.h"

/* ---------------------------------------------------------------- the guard */

struct pidset {
  long *v;
  size_t n, cap;
};

static void set_add(struct pidset *s, long pid) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 64;
    s->v = fm_xrealloc(s->v, s->cap * sizeof *s->v);
  }
  s->v[s->n++] = pid;
}

static void set_del(struct pidset *s, long pid) {
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i] == pid) {
      s->v[i] = s->v[--s->n];
      return;
    }
}

/* One "+PID" or "-PID" line. */
static void apply(struct pidset *s, const char *line) {
  char *end;
  long pid = strtol(line + 1, &end, 10);
  if (pid <= 1 || *end != '\0') return;
  if (line[0] == '+') set_add(s, pid);
  if (line[0] == '-') set_del(s, pid);
}

int fm_guard_main(const char *cgroup_root) {
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  struct pidset set = {0};
  char buf[4096], line[32];
  size_t used = 0;
  for (;;) {
    ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; i++) {
      if (buf[i] == '\n') {
        line[used] = '\0';
        apply(&set, line);
        used = 0;
      } else if (used + 1 < sizeof line) {
        line[used++] = buf[i];
      }
    }
  }
  /* The foreman is gone: so are its jobs, and all they started. */
  for (size_t i = 0; i < set.n; i++) kill((pid_t)-set.v[i], SIGKILL);
  free(set.v);
  if (cgroup_root != NULL) fm_cgroup_kill_tree(cgroup_root);
  return 0;
}

/* ---------------------------------------------------------------- the foreman's side */

struct note {
  uv_write_t req;
  char text[24];
};

static void on_note_written(uv_write_t *req, int status) {
  (void)status;
  free(req->data);
}

static void send_note(struct fm *fm, char sign, int64_t pid) {
  struct fm_guard *g = &fm->guard;
  if (!g->up) return;
  struct note *n = fm_xmalloc(sizeof *n);
  int len = snprintf(n->text, sizeof n->text, "%c%lld\n", sign, (long long)pid);
  n->req.data = n;
  uv_buf_t b = uv_buf_init(n->text, (unsigned)len);
  if (uv_write(&n->req, (uv_stream_t *)&g->in, &b, 1, on_note_written) != 0)
    free(n);
}

static void on_guard_exit(uv_process_t *proc, int64_t status, int sig);

static void on_in_closed(uv_handle_t *h) { (void)h; }

static void on_proc_closed(uv_handle_t *h) {
  struct fm *fm = h->data;
  struct fm_guard *g = &fm->guard;
  if (!g->closing && !fm->closed) fm_guard_start(fm);
}

static void on_guard_exit(uv_process_t *proc, int64_t status, int sig) {
  struct fm *fm = proc->data;
  struct fm_guard *g = &fm->guard;
  if (!g->closing) {
    char name[FM_SIG_BUF];
    if (sig)
      fm_logp(FM_WARNING, "guard_died",
              "the guard (pid %d) was killed by %s: starting another", proc->pid,
              fm_signame(name, sig));
    else
      fm_logp(FM_WARNING, "guard_died",
              "the guard (pid %d) exited with status %lld: starting another", proc->pid,
              (long long)status);
  }
  g->up = 0;
  if (!uv_is_closing((uv_handle_t *)&g->in))
    uv_close((uv_handle_t *)&g->in, on_in_closed);
  uv_close((uv_handle_t *)proc, on_proc_closed);
}

void fm_guard_start(struct fm *fm) {
  struct fm_guard *g = &fm->guard;
  char *args[] = {"jobq", "work", "--internal-guard", (char *)fm_cgroup_root(fm),
                  NULL};
  uv_stdio_container_t stdio[3];
  uv_pipe_init(fm->loop, &g->in, 0);
  g->in.data = fm;
  stdio[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
  stdio[0].data.stream = (uv_stream_t *)&g->in;
  stdio[1].flags = UV_IGNORE;
  stdio[2].flags = UV_INHERIT_FD;
  stdio[2].data.fd = STDERR_FILENO;
  uv_process_options_t o;
  memset(&o, 0, sizeof o);
  o.file = "/proc/self/exe";
  o.args = args;
  o.env = fm->env.vars;
  o.flags = UV_PROCESS_DETACHED;
  o.stdio_count = 3;
  o.stdio = stdio;
  o.exit_cb = on_guard_exit;
  g->proc.data = fm;
  int rc = uv_spawn(fm->loop, &g->proc, &o);
  if (rc != 0) {
    fm_logp(FM_WARNING, "guard_failed",
            "cannot start the guard that stops jobs if the foreman dies: %s; "
            "jobs of a killed foreman may keep running",
            uv_strerror(rc));
    uv_close((uv_handle_t *)&g->in, on_in_closed);
    uv_close((uv_handle_t *)&g->proc, NULL);
    g->up = 0;
    return;
  }
  g->up = 1;
  for (size_t i = 0; i < g->n; i++) send_note(fm, '+', g->pids[i]);
}

void fm_guard_watch(struct fm *fm, int pid) {
  struct fm_guard *g = &fm->guard;
  if (g->n == g->cap) {
    g->cap = g->cap ? g->cap * 2 : 64;
    g->pids = fm_xrealloc(g->pids, g->cap * sizeof *g->pids);
  }
  g->pids[g->n++] = pid;
  send_note(fm, '+', pid);
}

void fm_guard_forget(struct fm *fm, int pid) {
  struct fm_guard *g = &fm->guard;
  for (size_t i = 0; i < g->n; i++)
    if (g->pids[i] == pid) {
      g->pids[i] = g->pids[--g->n];
      send_note(fm, '-', pid);
      return;
    }
}

void fm_guard_close(struct fm *fm) {
  struct fm_guard *g = &fm->guard;
  g->closing = 1;
  if (g->up) {
    /* End of file: the guard kills what is left (nothing, normally) and
     * exits; the process handle goes when it has. */
    uv_close((uv_handle_t *)&g->in, on_in_closed);
    g->up = 0;
  }
  free(g->pids);
  g->pids = NULL;
  g->n = g->cap = 0;
}
