/*
 * jobq-exec.c - the exec helper every job and persistent worker of
 * `jobq work` starts through:
 *
 *   jobq-exec [-g CGROUP | -m CGROUP] [-u UID:GID:GID,...] PPID FILE ARG0 [ARGS...]
 *
 * FILE being the command as the foreman found it in PATH once, at its
 * start.  uv_spawn cannot run code between fork and exec, nor start a
 * process in a cgroup, and what must happen there has to happen in the
 * child.  So the foreman spawns this small program instead of COMMAND.
 *
 * Without -g it, in this order: becomes the job's user (-u, given by
 * `jobq work --user` to a foreman run as root: supplementary groups,
 * group, then user); asks for SIGKILL when its parent dies
 * (PR_SET_PDEATHSIG; after the change of user, which clears it) and
 * checks that its parent is still PPID (the foreman may have died before
 * the prctl); and execs COMMAND in the same process, which keeps the pid,
 * the process group and the signal.
 *
 * With -g (a directory the foreman made for the job, foreman/cgroup.c),
 * the command must start in that cgroup, so that everything it starts is
 * in it.  The helper opens the directory and starts the command's process
 * there with clone3(CLONE_INTO_CGROUP) (Linux 5.7): no process is ever
 * moved from one cgroup to another, and so the start does not wait for
 * the kernel's lock on moves (an RCU grace period, up to milliseconds).
 * That process makes its own process group (the job's pid is its process
 * group's id, as without -g), takes the user, asks for SIGKILL when the
 * helper dies, checks that the helper is still its parent, and execs.
 * The helper, which asked for SIGKILL when the foreman dies before it
 * cloned, then stays as the job's parent until it ends, and ends the same
 * way: with its exit status, or killed by its signal.  A signal sent to
 * the helper by anyone but the foreman is passed on to the command (an
 * operator's `kill PID` with the pid the foreman logs); the foreman's own
 * signals are not, since the foreman signals every process of the job's
 * cgroup itself.  Where clone3 or CLONE_INTO_CGROUP is refused (a kernel
 * before 5.7, a seccomp filter), the helper moves itself into the cgroup
 * (writing 0 to its cgroup.procs) and goes on as without -g.  With -m
 * instead of -g it moves itself at once, without trying the clone: the
 * foreman passes -m once it found at its start that the kernel refuses
 * it, and said so in its log (fm_cgroup_init).
 *
 * Its stdin is already the job's whole payload, a sealed memory file the
 * foreman filled before the fork (foreman/child.c): the helper does not
 * touch it.  If the foreman dies at any point before the exec, the command
 * never runs: either a parent-death signal kills the process, or the
 * check of its parent sees the foreman (or the helper) gone.
 *
 * It is its own program, linked with nothing but libc, because it runs
 * once per job: exec'ing the whole jobq binary (SQLite, libuv, jansson)
 * costs several times as much.  Exit status 127: COMMAND was not found;
 * 126: it could not be run (nor the cgroup joined, nor the user taken);
 * 1: the foreman was already gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_GROUPS 1024

struct user {
  uid_t uid;
  gid_t gid;
  gid_t groups[MAX_GROUPS];
  size_t ngroups;
};

/* errno's text in lower case, as jobq's messages have it. */
static const char *errtext(int e) {
  static char buf[128];
  snprintf(buf, sizeof buf, "%s", strerror(e));
  if (buf[0] >= 'A' && buf[0] <= 'Z') buf[0] = (char)(buf[0] - 'A' + 'a');
  return buf;
}

static int usage(void) {
  fputs("usage: jobq-exec [-g CGROUP | -m CGROUP] [-u UID:GID:GID,...] PPID "
        "FILE ARG0 "
        "[ARGS...] (started by jobq work)\n",
        stderr);
  return 2;
}

/* Reads the user "UID:GID:GID,GID,..." into u; 0, or -1 if malformed. */
static int parse_user(const char *spec, struct user *u) {
  char *end;
  u->ngroups = 0;
  u->uid = (uid_t)strtoul(spec, &end, 10);
  if (*end != ':') return -1;
  u->gid = (gid_t)strtoul(end + 1, &end, 10);
  if (*end != ':') return -1;
  for (const char *p = end + 1; *p != '\0' && u->ngroups < MAX_GROUPS;) {
    u->groups[u->ngroups++] = (gid_t)strtoul(p, &end, 10);
    if (end == p || (*end != ',' && *end != '\0')) return -1;
    p = *end == ',' ? end + 1 : end;
  }
  return 0;
}

/* Moves this process into the cgroup whose directory is dir. */
static int join_cgroup(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/cgroup.procs", dir);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, "0", 1) != 1) {
    fprintf(stderr, "jobq work: cannot join the job's cgroup '%s': %s\n", dir,
            errtext(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  close(fd);
  return 0;
}

/*
 * Runs the command in this process: takes the user u (when not NULL),
 * asks for SIGKILL when its parent dies, checks that the parent is still
 * parent, restores the signal mask and execs.  Returns only on failure,
 * with the exit status.
 */
static int run(const struct user *u, pid_t parent, const sigset_t *mask,
               char *file, char **argv) {
  if (u != NULL && (setgroups(u->ngroups, u->groups) != 0 || setgid(u->gid) != 0 ||
                    setuid(u->uid) != 0)) {
    fprintf(stderr, "jobq work: cannot run the job as user %lu: %s\n",
            (unsigned long)u->uid, errtext(errno));
    return 126;
  }
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
    return 1; /* the foreman is already gone */
  sigprocmask(SIG_SETMASK, mask, NULL);
  execv(file, argv);
  int e = errno;
  fprintf(stderr, "jobq work: cannot run '%s': %s\n", file, errtext(e));
  return e == ENOENT ? 127 : 126;
}

/*
 * The process of the command, started in the cgroup whose directory is
 * open on dir: its pid to the helper, 0 to the new process, -1 with
 * errno when the kernel refuses (ENOSYS before Linux 5.3 or under a
 * seccomp filter, EINVAL or E2BIG before 5.7 for CLONE_INTO_CGROUP).
 * Like fork without glibc's bookkeeping, which a process that only
 * changes its user and execs does not need; and like vfork, the helper
 * goes on once the new process has exec'd or died.
 */
static pid_t clone_into(int dir) {
  struct clone_args args;
  memset(&args, 0, sizeof args);
  args.flags = CLONE_INTO_CGROUP | CLONE_VFORK;
  args.exit_signal = SIGCHLD;
  args.cgroup = (uint64_t)dir;
  return (pid_t)syscall(SYS_clone3, &args, sizeof args);
}

/*
 * Starts the command's process in the cgroup whose directory is open on
 * dir, with every signal of all blocked: its pid to the helper (which
 * must then relay), 0 to the new process (which must then run the
 * command), -1 when it could not.  That is also when the kernel killed
 * the new process before it ran a single instruction.  Recent kernels
 * (seen on Linux 6.18) do that when cgroup.kill was ever written in the
 * new process's cgroup or in the helper's own, and not as many times in
 * both: they compare the count of kills of the wrong cgroup.  The
 * foreman uses no cgroup again once it was killed, but cannot tell what
 * others did; moving the helper is not affected.  A shared page tells
 * whether the process ran.
 */
static pid_t start_in(int dir) {
  volatile char *ran = mmap(NULL, 1, PROT_READ | PROT_WRITE,
                            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (ran == MAP_FAILED) return -1;
  pid_t child = clone_into(dir);
  if (child == 0) {
    *ran = 1;
    return 0;
  }
  if (child > 0 && !*ran) {
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {
    }
    child = -1;
  }
  munmap((void *)ran, 1);
  return child;
}

/*
 * The helper, once the command's process runs: waits for it, passing on
 * every signal someone other than the foreman (or the kernel, or itself)
 * sends, then ends the way it ended.  Every signal that may be caught is
 * blocked (all) and taken with sigwaitinfo, so nothing interrupts the
 * wait and no handler runs.
 */
static int relay(pid_t child, pid_t foreman, const sigset_t *all) {
  /* The job's stdin and stdout are the command's alone: the foreman sees
   * end of file or a broken pipe when the command is done with them. */
  close(STDIN_FILENO);
  close(STDOUT_FILENO);
  pid_t self = getpid();
  int status;
  for (;;) {
    siginfo_t si;
    int sig = sigwaitinfo(all, &si);
    if (sig == SIGCHLD) {
      if (waitpid(child, &status, WNOHANG) == child) break;
    } else if (sig > 0 && si.si_pid != foreman && si.si_pid != self &&
               (si.si_code == SI_USER || si.si_code == SI_QUEUE ||
                si.si_code == SI_TKILL)) {
      kill(child, sig);
    }
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  /* Killed by sig: so is the helper, without a core dump of its own. */
  int sig = WTERMSIG(status);
  prctl(PR_SET_DUMPABLE, 0);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  sigprocmask(SIG_UNBLOCK, &one, NULL);
  kill(self, sig);
  return 128 + sig;
}

int main(int argc, char **argv) {
  const char *cgroup = NULL, *spec = NULL;
  int move = 0;
  int i = 1;
  for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
    if (strcmp(argv[i], "-g") == 0 || strcmp(argv[i], "-m") == 0) {
      cgroup = argv[i + 1];
      move = argv[i][1] == 'm';
    } else if (strcmp(argv[i], "-u") == 0)
      spec = argv[i + 1];
    else
      return usage();
  }
  char *end;
  long ppid = argc - i >= 3 ? strtol(argv[i], &end, 10) : 0;
  if (argc - i < 3 || ppid <= 0 || *end != '\0') return usage();
  static struct user user;
  if (spec != NULL && parse_user(spec, &user) != 0) return usage();
  const struct user *u = spec != NULL ? &user : NULL;
  char *file = argv[i + 1], **args = argv + i + 2;
  sigset_t mask, all;
  sigprocmask(SIG_SETMASK, NULL, &mask);
  if (cgroup != NULL && !move) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != (pid_t)ppid)
      return 1; /* the foreman is already gone */
    int dir = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
      /* Blocked before the clone, so that no signal is lost or kills the
       * helper before it waits; the command restores the mask. */
      sigfillset(&all);
      sigdelset(&all, SIGSEGV);
      sigdelset(&all, SIGBUS);
      sigdelset(&all, SIGILL);
      sigdelset(&all, SIGFPE);
      sigdelset(&all, SIGTRAP);
      sigdelset(&all, SIGSYS);
      sigprocmask(SIG_BLOCK, &all, NULL);
      pid_t self = getpid();
      pid_t child = start_in(dir);
      if (child == 0) {
        if (setpgid(0, 0) != 0) _exit(126);
        _exit(run(u, self, &mask, file, args));
      }
      close(dir);
      if (child > 0) return relay(child, (pid_t)ppid, &all);
      sigprocmask(SIG_SETMASK, &mask, NULL);
    }
  }
  /* Refused, or no directory to clone into (the move says why not), or
   * -m. */
  if (cgroup != NULL && join_cgroup(cgroup) != 0) return 126;
  return run(u, (pid_t)ppid, &mask, file, args);
}
