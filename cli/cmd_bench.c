/*
 * cmd_bench.c - `jobq bench`: runs jobq-bench, the benchmark, a program of
 * its own (bench/), as git runs its helpers.  It is looked for beside this
 * program (the build folder, or an installation that keeps them
 * together), then where `make install` puts it from here
 * (PREFIX/bin/jobq, PREFIX/libexec/jobq/jobq-bench).  The global options
 * given before the command name go along; the rest of the command line
 * goes as it is, --help included.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "builtin.h"

static int run(int argc, char **argv) {
  static const char *const places[] = {"%.*s/jobq-bench", "%.*s/../libexec/jobq/jobq-bench"};
  char self[PATH_MAX], helper[PATH_MAX + 32];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    cli_error("cannot find this program in /proc/self/exe: %s", cli_strerror(errno));
    return CLI_EXIT_ERROR;
  }
  self[len] = '\0';
  int dir = (int)(strrchr(self, '/') - self);
  size_t i = 0;
  for (; i < sizeof places / sizeof places[0]; i++) {
    snprintf(helper, sizeof helper, places[i], dir, self);
    if (access(helper, X_OK) == 0) break;
  }
  if (i == sizeof places / sizeof places[0]) {
    cli_error("cannot find jobq-bench beside %s nor in %.*s/../libexec/jobq: "
              "build it with make, or install it with make install",
              self, dir, self);
    return CLI_EXIT_ERROR;
  }
  /* jobq-bench [--db URL | --db-file FILE] [--json] [--max-payload SIZE]
   * ARGS... */
  char **args = cli_xmalloc((size_t)(argc + 8) * sizeof *args);
  int n = 0;
  args[n++] = helper;
  char db[] = "--db", db_file[] = "--db-file", json[] = "--json",
       max_payload[] = "--max-payload";
  if (cli_global.db != NULL) {
    args[n++] = db;
    args[n++] = (char *)cli_global.db;
  }
  if (cli_global.db_file != NULL) {
    args[n++] = db_file;
    args[n++] = (char *)cli_global.db_file;
  }
  if (cli_global.json) args[n++] = json;
  if (cli_global.max_payload != NULL) {
    args[n++] = max_payload;
    args[n++] = (char *)cli_global.max_payload;
  }
  for (int k = 1; k < argc; k++) args[n++] = argv[k];
  args[n] = NULL;
  fflush(stdout);
  execv(helper, args);
  cli_error("cannot run %s: %s", helper, cli_strerror(errno));
  return CLI_EXIT_ERROR;
}

const struct cli_command cli_cmd_bench = {
    "bench", "run standard workloads and report their throughput and latency", run};
