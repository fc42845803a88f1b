/*
 * cgroup.c - a cgroup for each job, where the foreman can make one, so
 * that stopping a job stops everything it started, even what left its
 * process group and session (a daemon: setsid and a double fork).
 *
 * At the start the foreman finds the cgroup v2 hierarchy
 * (/proc/self/mountinfo) and its own cgroup in it (/proc/self/cgroup),
 * and makes a directory there for its jobs, jobq-PID-N.  That works where
 * the foreman may write its own cgroup: as root on a writable
 * /sys/fs/cgroup, or as a systemd service with Delegate=yes (or under
 * `systemd-run -p Delegate=yes`), which hands the service's cgroup to
 * its user.  Every job (and persistent worker) then runs in a cgroup
 * jobq-PID-N/M of its own: the exec helper (jobq-exec.c) starts the job's
 * first process there (clone3 with CLONE_INTO_CGROUP), so nothing the job
 * starts is outside it, and no process is moved between cgroups, which
 * would hold each start for an RCU grace period.  Where the kernel
 * refuses that clone (before Linux 5.7, or a seccomp filter; the start
 * tries it once and says so), the helper moves itself into the cgroup
 * before exec instead.  Stopping a job (timeout, cancel, output over the
 * limit, end of the grace) sends SIGTERM to its helper's process group
 * and to every other process of its cgroup, then SIGKILL through
 * cgroup.kill; when its first process exits, whatever is left in the
 * cgroup is killed.  The cgroups are reused from job to job (making one
 * costs about 0.1 ms, checking that one is empty a read of a file kept
 * open), but for those that had to be killed, and removed at the end;
 * when the foreman dies, its guard kills jobq-PID-N as a whole and
 * removes it.
 *
 * Where there is no cgroup v2 or the foreman may not write its cgroup,
 * jobs run without one and their process group is all that is stopped:
 * a job that leaves it outlives its timeout.  The start says so in the
 * log.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fm.h"

#define EMPTY_WAIT_MS 2000   /* how long the end waits for cgroups to empty */

struct fm_cgroup {
  char *dir;
  int events;                 /* cgroup.events, open for reading */
  int killed;                 /* cgroup.kill was written */
  struct fm_cgroup *next;     /* in the free or the dead list */
  struct fm_cgroup *all;      /* every cgroup of the foreman */
};

struct fm_cgroups {
  char *root;                 /* .../jobq-PID-N */
  int next_id;
  struct fm_cgroup *free;     /* empty, never killed: for the next jobs */
  struct fm_cgroup *dead;     /* killed: removed once empty */
  struct fm_cgroup *all;
  int warned;                 /* a cgroup could not be made mid-run */
  int move;                   /* jobs cannot start in their cgroups */
};

/* ---------------------------------------------------------------- files */

/* Writes text to dir/name; 0 or -1 with errno. */
static int write_file(const char *dir, const char *name, const char *text) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t len = strlen(text);
  ssize_t n = write(fd, text, len);
  int e = errno;
  close(fd);
  if (n == (ssize_t)len) return 0;
  errno = n < 0 ? e : EIO;
  return -1;
}

/* Whether the cgroup whose cgroup.events is open on fd has processes
 * (in it or below); 1 when it cannot tell. */
static int populated(int fd) {
  char buf[256];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return 1;
  buf[n] = '\0';
  const char *p = strstr(buf, "populated ");
  return p == NULL || p[10] != '0';
}

/* The first line of path that starts with prefix, without its newline,
 * in buf; NULL when there is none. */
static char *find_line(const char *path, const char *prefix, char *buf,
                       size_t size) {
  FILE *f = fopen(path, "re");
  if (f == NULL) return NULL;
  char *found = NULL;
  while (fgets(buf, (int)size, f) != NULL) {
    if (strncmp(buf, prefix, strlen(prefix)) == 0) {
      buf[strcspn(buf, "\n")] = '\0';
      found = buf;
      break;
    }
  }
  fclose(f);
  return found;
}

/*
 * The directory of this process's cgroup in the cgroup v2 hierarchy, in
 * buf; NULL with why when there is none.  /proc/self/cgroup names it
 * ("0::/PATH"), relative to the root of the mount that /proc/self/
 * mountinfo shows with the type cgroup2.
 */
static char *own_cgroup(char *buf, size_t size, char *why, size_t whysize) {
  char line[4096], mount[4096];
  const char *path = find_line("/proc/self/cgroup", "0::", line, sizeof line);
  if (path == NULL) {
    snprintf(why, whysize, "no cgroup v2 hierarchy (only cgroup v1)");
    return NULL;
  }
  path += 3;
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (f == NULL) {
    snprintf(why, whysize, "cannot read /proc/self/mountinfo: %s", fm_strerror(errno));
    return NULL;
  }
  int found = 0;
  while (!found && fgets(mount, sizeof mount, f) != NULL) {
    /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - TYPE SOURCE SUPER */
    char *dash = strstr(mount, " - ");
    if (dash == NULL || strncmp(dash + 3, "cgroup2 ", 8) != 0) continue;
    char *field[5];
    char *save = NULL, *tok = mount;
    int n = 0;
    for (; n < 5 && (tok = strtok_r(n == 0 ? mount : NULL, " ", &save)) != NULL; n++)
      field[n] = tok;
    if (n < 5) continue;
    const char *root = field[3], *point = field[4];
    size_t rlen = strcmp(root, "/") == 0 ? 0 : strlen(root);
    if (strncmp(path, root, rlen) != 0 || (path[rlen] != '/' && path[rlen] != '\0'))
      continue; /* a mount of another part of the hierarchy */
    snprintf(buf, size, "%s%s", point, strcmp(path + rlen, "/") == 0 ? "" : path + rlen);
    found = 1;
  }
  fclose(f);
  if (!found) {
    snprintf(why, whysize, "the cgroup v2 hierarchy is not mounted here");
    return NULL;
  }
  return buf;
}

/*
 * Whether a process can start in the cgroup whose directory is dir, as
 * the exec helper starts each job: NULL, or why not in why.  It tries: a
 * copy of this process starts there and exits at once.  The kernel or a
 * seccomp filter may refuse clone3 or CLONE_INTO_CGROUP (ENOSYS, EPERM,
 * EINVAL, E2BIG), or kill the copy at its start where cgroup.kill was
 * ever written in the foreman's own cgroup (see start_in in
 * jobq-exec.c).  Called before the foreman has threads.
 */
static const char *cannot_start_in(const char *dir, char *why, size_t size) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, size, "cannot open it: %s", fm_strerror(errno));
    return why;
  }
  struct clone_args args;
  memset(&args, 0, sizeof args);
  args.flags = CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = (uint64_t)fd;
  long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) syscall(SYS_exit_group, 0);
  int e = errno, status = 0;
  close(fd);
  if (pid < 0) {
    snprintf(why, size, "clone3 with CLONE_INTO_CGROUP: %s", fm_strerror(e));
    return why;
  }
  while (waitpid((pid_t)pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    snprintf(why, size, "the kernel kills a process started there at once, as "
                        "cgroup.kill was written in the foreman's cgroup before");
    return why;
  }
  return NULL;
}

/* ---------------------------------------------------------------- the foreman's side */

void fm_cgroup_init(struct fm *fm) {
  char own[4096], why[512], root[4200];
  fm->cgroups = NULL;
  if (own_cgroup(own, sizeof own, why, sizeof why) == NULL) {
    fm_logp(FM_NOTICE, "no_cgroups",
            "jobs run without a cgroup of their own (%s): stopping a job stops "
            "its process group only",
            why);
    return;
  }
  /* The pid, and the time for a pid reused after a foreman whose guard
   * could not clean up. */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(root, sizeof root, "%s/jobq-%ld-%lx", own, (long)getpid(),
           (unsigned long)ts.tv_nsec);
  char procs[4200];
  snprintf(procs, sizeof procs, "%s/cgroup.procs", own);
  /* Starting a process from the foreman's cgroup in a job's, or moving
   * one there, needs write access to the cgroup.procs of the cgroup that
   * holds both: the foreman's (the job's is its own, made below). */
  if (access(procs, W_OK) != 0 || mkdir(root, 0755) != 0) {
    int e = errno;
    fm_logp(FM_NOTICE, "no_cgroups",
            "jobs run without a cgroup of their own (cannot write the foreman's "
            "cgroup %s: %s; run as root, or under systemd with Delegate=yes): "
            "stopping a job stops its process group only",
            own, fm_strerror(e));
    return;
  }
  struct fm_cgroups *cg = fm_xmalloc(sizeof *cg);
  memset(cg, 0, sizeof *cg);
  cg->root = fm_xstrdup(root);
  if (cannot_start_in(root, why, sizeof why) != NULL) {
    fm_logp(FM_NOTICE, "cgroup_move",
            "jobs cannot start in their cgroups (%s): each job's process is moved "
            "into its cgroup instead, which can hold its start for a few "
            "milliseconds",
            why);
    cg->move = 1;
  }
  fm->cgroups = cg;
}

const char *fm_cgroup_flag(const struct fm *fm) {
  return fm->cgroups != NULL && fm->cgroups->move ? "-m" : "-g";
}

const char *fm_cgroup_root(const struct fm *fm) {
  return fm->cgroups != NULL ? fm->cgroups->root : NULL;
}

const char *fm_cgroup_dir(const struct fm_cgroup *c) { return c->dir; }

/* Removes the dead cgroups that are empty now (their processes die a
 * moment after cgroup.kill). */
static void remove_dead(struct fm_cgroups *cgs) {
  struct fm_cgroup **p = &cgs->dead;
  while (*p != NULL) {
    struct fm_cgroup *c = *p;
    if (populated(c->events) || rmdir(c->dir) != 0) {
      p = &c->next;
      continue;
    }
    *p = c->next;
    struct fm_cgroup **a = &cgs->all;
    while (*a != c) a = &(*a)->all;
    *a = c->all;
    close(c->events);
    free(c->dir);
    free(c);
  }
}

struct fm_cgroup *fm_cgroup_get(struct fm *fm) {
  struct fm_cgroups *cgs = fm->cgroups;
  if (cgs == NULL) return NULL;
  remove_dead(cgs);
  if (cgs->free != NULL) {
    struct fm_cgroup *c = cgs->free;
    cgs->free = c->next;
    c->next = NULL;
    return c;
  }
  char dir[4300];
  snprintf(dir, sizeof dir, "%s/%d", cgs->root, ++cgs->next_id);
  int fd = -1;
  if (mkdir(dir, 0755) == 0) {
    char path[4400];
    snprintf(path, sizeof path, "%s/cgroup.events", dir);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) rmdir(dir);
  }
  if (fd < 0) {
    if (!cgs->warned)
      fm_logp(FM_WARNING, "cgroup_failed",
              "cannot make a cgroup for a job (%s: %s): it runs without one", dir,
              fm_strerror(errno));
    cgs->warned = 1;
    return NULL;
  }
  struct fm_cgroup *c = fm_xmalloc(sizeof *c);
  memset(c, 0, sizeof *c);
  c->dir = fm_xstrdup(dir);
  c->events = fd;
  c->all = cgs->all;
  cgs->all = c;
  return c;
}

/* Kills whatever is left in c; 1 if something was. */
static int kill_rest(struct fm_cgroup *c) {
  if (!populated(c->events)) return 0;
  write_file(c->dir, "cgroup.kill", "1");
  c->killed = 1;
  return 1;
}

/*
 * A cgroup that was empty at the end of its job, and never killed, is
 * used again.  One that was killed (now, or while its job ran) is
 * removed once empty and never used again: a process started in a
 * cgroup that was killed may be killed at its start (see start_in in
 * jobq-exec.c), and one still dying would count in the next job's.
 */
void fm_cgroup_put(struct fm *fm, struct fm_cgroup *c) {
  if (c == NULL) return;
  struct fm_cgroups *cgs = fm->cgroups;
  kill_rest(c);
  struct fm_cgroup **list = c->killed ? &cgs->dead : &cgs->free;
  c->next = *list;
  *list = c;
}

void fm_signal_job(struct fm_cgroup *c, int pgid, int sig) {
  if (pgid > 0) kill(-pgid, sig);
  if (c == NULL) return;
  if (sig == SIGKILL) {
    kill_rest(c);
    return;
  }
  /* Every process of the cgroup that is not in the group, which has had
   * the signal once already.  A job started in its cgroup by the exec
   * helper is in a group of its own, so the group is the helper alone,
   * which passes on no signal of the foreman's: each of the job's
   * processes has the signal once, from here. */
  char path[4400];
  snprintf(path, sizeof path, "%s/cgroup.procs", c->dir);
  FILE *f = fopen(path, "re");
  if (f == NULL) return;
  long pid;
  while (fscanf(f, "%ld", &pid) == 1)
    if (getpgid((pid_t)pid) != pgid) kill((pid_t)pid, sig);
  fclose(f);
}

/* Sleeps ms milliseconds. */
static void nap(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

void fm_cgroup_close(struct fm *fm) {
  struct fm_cgroups *cgs = fm->cgroups;
  if (cgs == NULL) return;
  for (struct fm_cgroup *c = cgs->all; c != NULL; c = c->all) kill_rest(c);
  for (int waited = 0; waited < EMPTY_WAIT_MS; waited += 10) {
    int busy = 0;
    for (struct fm_cgroup *c = cgs->all; c != NULL && !busy; c = c->all)
      busy = populated(c->events);
    if (!busy) break;
    nap(10);
  }
  struct fm_cgroup *c = cgs->all;
  while (c != NULL) {
    struct fm_cgroup *next = c->all;
    close(c->events);
    if (rmdir(c->dir) != 0)
      fm_logp(FM_WARNING, "cgroup_failed", "cannot remove the cgroup %s: %s", c->dir,
              fm_strerror(errno));
    free(c->dir);
    free(c);
    c = next;
  }
  if (rmdir(cgs->root) != 0)
    fm_logp(FM_WARNING, "cgroup_failed", "cannot remove the cgroup %s: %s", cgs->root,
            fm_strerror(errno));
  free(cgs->root);
  free(cgs);
  fm->cgroups = NULL;
}

/* ---------------------------------------------------------------- the guard's side */

void fm_cgroup_kill_tree(const char *root) {
  /* cgroup.kill kills every process of the cgroup and of those below. */
  write_file(root, "cgroup.kill", "1");
  char path[4200];
  snprintf(path, sizeof path, "%s/cgroup.events", root);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  for (int waited = 0; fd >= 0 && populated(fd) && waited < EMPTY_WAIT_MS; waited += 10)
    nap(10);
  if (fd >= 0) close(fd);
  DIR *d = opendir(root);
  if (d != NULL) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.' || e->d_type != DT_DIR) continue;
      char sub[4400];
      snprintf(sub, sizeof sub, "%s/%s", root, e->d_name);
      rmdir(sub);
    }
    closedir(d);
  }
  rmdir(root);
}
