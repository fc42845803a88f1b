/*
 * cmd_reap.c - `jobq reap`: deletes expired sessions now (workers do this
 * on their own as they heartbeat); their jobs go back to ready.  When
 * every session has been silent for longer than its lease, the stall
 * guard holds reaping back for a lease (the database itself may have
 * stalled): the command waits that lease out and reaps those that stayed
 * silent, unless told not to wait.
 */
#include <errno.h>
#include <time.h>

#include "builtin.h"

static const char usage[] =
    "usage: jobq reap [--no-wait]\n"
    "\n"
    "Deletes the sessions whose lease has expired on the database clock and\n"
    "puts their jobs back to ready, then prints how many sessions went:\n"
    "'reaped N sessions'.\n"
    "\n"
    "When no session at all has heartbeated for longer than the longest\n"
    "lease, the database itself may have stalled rather than every worker\n"
    "died: then every session first gets one more lease, and jobq reap waits\n"
    "it out (saying so) and reaps the sessions that stayed silent.  Live\n"
    "workers heartbeat meanwhile and keep their jobs.  With --no-wait it\n"
    "reaps nothing then and says when to run it again.\n";

/* Sleeps ms milliseconds, through signals that do not end the program. */
static void sleep_ms(int64_t ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int run(int argc, char **argv) {
  int no_wait = 0;
  const struct cli_option options[] = {
      CLI_FLAG(0, "no-wait", &no_wait,
               "when the stall guard holds reaping back, do not wait for it"),
      CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (cli_check_args(argc, argv, 0, "no arguments")) return CLI_EXIT_USAGE;

  jobq *db;
  if ((rc = cli_open(&db)) != 0) return rc;
  int64_t count = 0, held = 0;
  rc = jobq_reap_held(db, &count, &held);
  if (rc == JOBQ_OK && held > 0) {
    char d[CLI_TIME_BUF];
    cli_fmt_duration(d, held);
    if (no_wait) {
      cli_error("no session has heartbeated for longer than its lease: the database "
                "itself may have stalled, so every session got one more lease; run "
                "'jobq reap' again in %s to reap those that stay silent",
                d);
    } else {
      cli_error("no session has heartbeated for longer than its lease: the database "
                "itself may have stalled, so every session got one more lease; waiting "
                "%s for live workers to heartbeat",
                d);
      /* A little past the guard's lease: its look is then a lease old. */
      sleep_ms(held + 100);
      rc = jobq_reap_held(db, &count, &held);
    }
  }
  if (rc != JOBQ_OK)
    rc = cli_lib_error(db, rc);
  else
    cli_print_count("reaped", count, "session");
  jobq_close(db);
  return rc;
}

const struct cli_command cli_cmd_reap = {
    "reap", "end expired sessions now and free their jobs", run};
