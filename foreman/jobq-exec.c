/*
 * jobq-exec.c - the exec helper every job and persistent worker of
 * `jobq work` starts through: `jobq-exec PPID FILE ARG0 [ARGS...]`, FILE
 * being the command as the foreman found it in PATH once, at its start.
 *
 * uv_spawn cannot run code between fork and exec, and Linux's
 * parent-death signal has to be set in the child.  So the foreman spawns
 * this small program instead of COMMAND: it asks for SIGKILL when its
 * parent dies (PR_SET_PDEATHSIG), checks that its parent is still PPID
 * (the foreman may have died before the prctl), and then execs COMMAND in
 * the same process, which keeps the pid, the process group and the
 * signal.  A job's first process thus dies with the foreman, however
 * early; the guard (guard.c) takes care of the processes it starts.
 *
 * It is its own program, linked with nothing but libc, because it runs
 * once per job: exec'ing the whole jobq binary (SQLite, libuv, jansson)
 * costs several times as much.  Exit status 127: COMMAND was not found;
 * 126: it could not be run; 1: the foreman was already gone.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv) {
  char *end;
  long ppid = argc >= 4 ? strtol(argv[1], &end, 10) : 0;
  if (argc < 4 || ppid <= 0 || *end != '\0') {
    fputs("usage: jobq-exec PPID FILE ARG0 [ARGS...] (started by jobq work)\n",
          stderr);
    return 2;
  }
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != (pid_t)ppid)
    return 1; /* the foreman is already gone */
  execv(argv[2], argv + 3);
  int e = errno;
  fprintf(stderr, "jobq work: cannot run '%s': %s\n", argv[2], strerror(e));
  return e == ENOENT ? 127 : 126;
}
