/*
 * cmd_parts.c - `jobq parts`: shows or sets how many parts a queue is
 * split into, and shows each part's owner.  The sessions that claim from
 * the queue share its parts out among themselves and claim only from
 * their own (jobq.h, jobq_set_parts).
 */
#include <stdlib.h>
#include <string.h>

#include "builtin.h"

static const char usage[] =
    "usage: jobq parts QUEUE [N]\n"
    "\n"
    "Splits the queue into N parts (1 to 1024; 1, the default, is the queue\n"
    "in one piece).  A job's part is a hash of its ordering key, or any part\n"
    "for a job without one; the workers that claim from the queue share its\n"
    "parts fairly and claim only from their own, so that their claims do\n"
    "not contend.  A change moves every unfinished job to its new part and\n"
    "shares the new parts out at once; jobs that run go on, and each key's\n"
    "jobs still run one at a time, in order.  Without N, prints the count,\n"
    "and for each part its owner (the session), since when, and its ready\n"
    "jobs.\n";

static void show(jobq *db, const char *queue, int parts, const jobq_part *v, size_t n,
                 int64_t now_ms) {
  if (cli_global.json) {
    json_t *o = cli_json_object();
    cli_json_set(o, "queue", json_string(queue));
    cli_json_set(o, "parts", json_integer(parts));
    json_t *list = json_array();
    if (list == NULL) cli_oom();
    for (size_t i = 0; i < n; i++) {
      json_t *p = cli_json_object();
      if (json_array_append_new(list, p) != 0) cli_oom();
      cli_json_set(p, "part", json_integer(v[i].part));
      cli_json_set(p, "session", v[i].live ? cli_json_str(v[i].session) : json_null());
      cli_json_set(p, "since", cli_json_time(v[i].since_ms));
      cli_json_set(p, "ready", json_integer(v[i].ready));
    }
    cli_json_set(o, "owners", list);
    cli_json_print(o);
    return;
  }
  printf("%s: %d part%s\n", queue, parts, parts == 1 ? "" : "s");
  if (n == 0) return;
  static const struct cli_column cols[] = {
      {"PART", 1}, {"SESSION", 0}, {"SINCE", 0}, {"READY", 1}};
  struct cli_table t;
  cli_table_init(&t, cols, sizeof cols / sizeof cols[0]);
  char a[CLI_TIME_BUF];
  for (size_t i = 0; i < n; i++) {
    cli_table_cell(&t, "%d", v[i].part);
    cli_table_cell(&t, "%s", v[i].live ? v[i].session : "-");
    cli_table_cell(&t, "%s", cli_fmt_relative(a, v[i].since_ms, now_ms));
    cli_table_cell(&t, "%lld", (long long)v[i].ready);
  }
  cli_table_print(&t);
  cli_table_release(&t);
}

static int run(int argc, char **argv) {
  const struct cli_option options[] = {CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (argc < 2) {
    cli_error("missing queue: expected 'jobq parts QUEUE [N]'");
    return CLI_EXIT_USAGE;
  }
  if (cli_check_args(argc, argv, 2, "'jobq parts QUEUE [N]'")) return CLI_EXIT_USAGE;
  const char *queue = argv[1];
  if (cli_check_queue("queue name", queue)) return CLI_EXIT_USAGE;
  int64_t want = 0;
  if (argc > 2 && cli_parse_int("count of parts", argv[2], 1, JOBQ_PARTS_MAX, &want))
    return CLI_EXIT_USAGE;

  jobq *db;
  if ((rc = argc > 2 ? cli_open(&db) : cli_open_readonly(&db)) != 0) return rc;
  int err = want > 0 ? jobq_set_parts(db, queue, (int)want) : JOBQ_OK;
  int64_t now_ms = 0;
  if (err == JOBQ_OK && (rc = cli_db_now(db, &now_ms)) != 0) {
    jobq_close(db);
    return rc;
  }
  int parts = 1;
  jobq_part *v = NULL;
  size_t n = 0;
  if (err == JOBQ_OK) err = jobq_parts(db, queue, &parts, &v, &n);
  if (err != JOBQ_OK) rc = cli_lib_error(db, err);
  else show(db, queue, parts, v, n, now_ms);
  jobq_parts_free(v, n);
  jobq_close(db);
  return rc;
}

const struct cli_command cli_cmd_parts = {
    "parts", "show or set how many parts a queue is split into, and their owners", run};
