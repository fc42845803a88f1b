/*
 * cmd_doctor.c - `jobq doctor`: looks the queue database over and says,
 * for each finding, what to do about it.  Only reads, the database and
 * this machine's state file (the completions its workers saw).
 */
#include <stdio.h>
#include <stdlib.h>

#include "../foreman/foreman.h"
#include "builtin.h"

static const char usage[] =
    "usage: jobq doctor [--state FILE] [--json]\n"
    "\n"
    "Checks the queue database: its identity, this host's clock against the\n"
    "database's, durability settings, the server's version and replication,\n"
    "transactions that hold back vacuum (naming the oldest), the hot table's\n"
    "bloat, lost writes (the completions this machine's workers last saw, from\n"
    "their state file, that the database no longer has), sessions close to\n"
    "expiring or expired without a reaper, and dead jobs.  Prints one line per\n"
    "check (ok, warn or FAIL) and, under the table, what to do about each one\n"
    "that is not ok.  Exit status 0 when nothing failed (warnings included), 1\n"
    "when a check failed.\n";

static const char *const level_names[] = {"ok", "warn", "FAIL"};

static void print_checks(const jobq_check *c, size_t n) {
  if (cli_global.json) {
    json_t *list = json_array();
    if (list == NULL) cli_oom();
    int worst = JOBQ_CHECK_OK;
    for (size_t i = 0; i < n; i++) {
      json_t *o = cli_json_object();
      if (json_array_append_new(list, o) != 0) cli_oom();
      cli_json_set(o, "name", cli_json_str(c[i].name));
      cli_json_set(o, "level", json_string(c[i].level == JOBQ_CHECK_FAIL ? "fail"
                                           : c[i].level == JOBQ_CHECK_WARN ? "warn"
                                                                            : "ok"));
      cli_json_set(o, "detail", cli_json_str(c[i].detail));
      cli_json_set(o, "advice", cli_json_str(c[i].advice));
      if (c[i].level > worst) worst = c[i].level;
    }
    json_t *doc = cli_json_object();
    cli_json_set(doc, "checks", list);
    cli_json_set(doc, "worst", json_string(worst == JOBQ_CHECK_FAIL ? "fail"
                                           : worst == JOBQ_CHECK_WARN ? "warn"
                                                                       : "ok"));
    cli_json_print(doc);
    return;
  }
  static const struct cli_column cols[] = {{"CHECK", 0}, {"STATUS", 0}, {"FINDING", 0}};
  struct cli_table t;
  cli_table_init(&t, cols, 3);
  for (size_t i = 0; i < n; i++) {
    cli_table_cell(&t, "%s", c[i].name);
    cli_table_cell(&t, "%s", level_names[c[i].level]);
    cli_table_cell(&t, "%s", c[i].detail);
  }
  cli_table_print(&t);
  cli_table_release(&t);
  int first = 1;
  for (size_t i = 0; i < n; i++) {
    if (c[i].advice == NULL || c[i].level == JOBQ_CHECK_OK) continue;
    if (first) putchar('\n');
    first = 0;
    printf("%s: %s\n", c[i].name, c[i].advice);
  }
}

/* Hands the handle what the state file says of its database, for the
 * doctor's check of lost writes: 0, or an exit status after a message. */
static int expect_state(jobq *db, const char *path) {
  char def[4096], why[320];
  if (path == NULL && fm_state_default(def, sizeof def) != 0) return 0;
  if (path == NULL) path = def;
  jobq_identity id;
  int rc = jobq_identity_get(db, &id);
  if (rc != JOBQ_OK) return cli_lib_error(db, rc);
  struct fm_state_db st;
  int got = fm_state_read(path, id.queue_id, &st, why, sizeof why);
  if (got < 0) {
    cli_error("%s", why);
    return CLI_EXIT_ERROR;
  }
  if (got == 0) return 0;
  jobq_identity seen = id;
  seen.epoch = st.epoch;
  seen.seq = st.seq;
  /* A refusal is what the checks report. */
  rc = jobq_expect(db, &seen, st.receipts, st.n);
  fm_state_db_release(&st);
  return rc == JOBQ_OK || rc == JOBQ_EIDENTITY ? 0 : cli_lib_error(db, rc);
}

static int run(int argc, char **argv) {
  const char *state = NULL;
  const struct cli_option options[] = {
      CLI_STRING(0, "state", &state, "FILE",
                 "the state file of this machine's workers (default: as jobq work's)"),
      CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (cli_check_args(argc, argv, 0, "no arguments")) return CLI_EXIT_USAGE;
  if (state != NULL && state[0] == '\0') {
    cli_error("invalid --state '': expected a file name");
    return CLI_EXIT_USAGE;
  }
  jobq *db;
  if ((rc = cli_open_readonly(&db)) != 0) return rc;
  jobq_check *c = NULL;
  size_t n = 0;
  rc = expect_state(db, state);
  if (rc != 0) {
    jobq_close(db);
    return rc;
  }
  rc = jobq_doctor(db, &c, &n);
  if (rc != JOBQ_OK) {
    rc = cli_lib_error(db, rc);
  } else {
    print_checks(c, n);
    for (size_t i = 0; i < n; i++)
      if (c[i].level == JOBQ_CHECK_FAIL) rc = CLI_EXIT_ERROR;
  }
  jobq_checks_free(c, n);
  jobq_close(db);
  return rc;
}

const struct cli_command cli_cmd_doctor = {
    "doctor", "check the queue database's health and say what to do", run};
