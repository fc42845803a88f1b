/*
 * jobq-exec.c - the exec helper every job and persistent worker of
 * `jobq work` starts through:
 *
 *   jobq-exec [-g CGROUP] [-u UID:GID:GID,...] PPID FILE ARG0 [ARGS...]
 *
 * FILE being the command as the foreman found it in PATH once, at its
 * start.  uv_spawn cannot run code between fork and exec, and what must
 * happen there has to happen in the child.  So the foreman spawns this
 * small program instead of COMMAND, and it, in this order:
 *
 *   1. joins the job's cgroup (-g, a directory the foreman made: writing
 *      0 to its cgroup.procs moves the writer), so that everything the
 *      job starts is in it (foreman/cgroup.c);
 *   2. becomes the job's user (-u, given by `jobq work --user` to a
 *      foreman run as root): supplementary groups, group, then user;
 *   3. asks for SIGKILL when its parent dies (PR_SET_PDEATHSIG; after the
 *      change of user, which clears it), and checks that its parent is
 *      still PPID (the foreman may have died before the prctl);
 *   4. execs COMMAND in the same process, which keeps the pid, the
 *      process group, the cgroup and the signal.
 *
 * Its stdin is already the job's whole payload, a sealed memory file the
 * foreman filled before the fork (foreman/child.c): the helper does not
 * touch it.  If the foreman dies at any point before step 4, the command
 * never runs: either the parent-death signal kills the helper, or the
 * check of step 3 sees the foreman gone.
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define MAX_GROUPS 1024

/* errno's text in lower case, as jobq's messages have it. */
static const char *errtext(int e) {
  static char buf[128];
  snprintf(buf, sizeof buf, "%s", strerror(e));
  if (buf[0] >= 'A' && buf[0] <= 'Z') buf[0] = (char)(buf[0] - 'A' + 'a');
  return buf;
}

static int usage(void) {
  fputs("usage: jobq-exec [-g CGROUP] [-u UID:GID:GID,...] PPID FILE ARG0 "
        "[ARGS...] (started by jobq work)\n",
        stderr);
  return 2;
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

/* Takes the user "UID:GID:GID,GID,..." for good. */
static int become(const char *spec) {
  gid_t groups[MAX_GROUPS];
  size_t n = 0;
  char *end;
  unsigned long uid = strtoul(spec, &end, 10);
  if (*end != ':') return -1;
  unsigned long gid = strtoul(end + 1, &end, 10);
  if (*end != ':') return -1;
  for (const char *p = end + 1; *p != '\0' && n < MAX_GROUPS;) {
    groups[n++] = (gid_t)strtoul(p, &end, 10);
    if (end == p || (*end != ',' && *end != '\0')) return -1;
    p = *end == ',' ? end + 1 : end;
  }
  if (setgroups(n, groups) != 0 || setgid((gid_t)gid) != 0 ||
      setuid((uid_t)uid) != 0) {
    fprintf(stderr, "jobq work: cannot run the job as user %lu: %s\n", uid,
            errtext(errno));
    return -2;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *cgroup = NULL, *user = NULL;
  int i = 1;
  for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
    if (strcmp(argv[i], "-g") == 0)
      cgroup = argv[i + 1];
    else if (strcmp(argv[i], "-u") == 0)
      user = argv[i + 1];
    else
      return usage();
  }
  char *end;
  long ppid = argc - i >= 3 ? strtol(argv[i], &end, 10) : 0;
  if (argc - i < 3 || ppid <= 0 || *end != '\0') return usage();
  if (cgroup != NULL && join_cgroup(cgroup) != 0) return 126;
  if (user != NULL) {
    int rc = become(user);
    if (rc == -1) return usage();
    if (rc != 0) return 126;
  }
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != (pid_t)ppid)
    return 1; /* the foreman is already gone */
  execv(argv[i + 1], argv + i + 2);
  int e = errno;
  fprintf(stderr, "jobq work: cannot run '%s': %s\n", argv[i + 1], errtext(e));
  return e == ENOENT ? 127 : 126;
}
