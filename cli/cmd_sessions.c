/*
 * cmd_sessions.c - `jobq sessions`: the workers' sessions, with their
 * leases as the database clock sees them, what they hold and what they
 * have done.
 */
#include <stdio.h>
#include <stdlib.h>

#include "builtin.h"

static const char usage[] =
    "usage: jobq sessions [--json]\n"
    "\n"
    "Lists the sessions registered by workers: id, name, host, pid, epoch,\n"
    "age, time since the last heartbeat, when the lease expires, the lease,\n"
    "jobs claimed now, jobs in flight as the worker reported, jobs done and\n"
    "failed, whether the lease has expired (such a session is reaped by\n"
    "the next worker heartbeat or 'jobq reap'), and the parts it holds of\n"
    "queues in parts (jobq parts), as QUEUE:PART,PART.\n";

/* "queue:0,1,2 other:3" for s's parts, "-" for none (free()). */
static char *parts_text(const jobq_session_info *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL) cli_oom();
  for (size_t q = 0; q < s->nparts; q++) {
    fprintf(f, "%s%s:", q ? " " : "", s->parts[q].queue);
    for (size_t k = 0; k < s->parts[q].n; k++)
      fprintf(f, "%s%d", k ? "," : "", s->parts[q].parts[k]);
  }
  if (s->nparts == 0) fputs("-", f);
  if (fclose(f) != 0) cli_oom();
  return buf;
}

static void print_sessions(const jobq_session_info *s, size_t n, int64_t now_ms) {
  if (cli_global.json) {
    json_t *list = json_array();
    if (list == NULL) cli_oom();
    for (size_t i = 0; i < n; i++) {
      json_t *o = cli_json_object();
      if (json_array_append_new(list, o) != 0) cli_oom();
      cli_json_set(o, "id", cli_json_str(s[i].id));
      cli_json_set(o, "name", cli_json_str(s[i].name));
      cli_json_set(o, "host", cli_json_str(s[i].host));
      cli_json_set(o, "pid", json_integer(s[i].pid));
      cli_json_set(o, "epoch", json_integer(s[i].epoch));
      cli_json_set(o, "started_at", cli_json_time(s[i].started_at_ms));
      cli_json_set(o, "heartbeat_at", cli_json_time(s[i].heartbeat_at_ms));
      cli_json_set(o, "expires_at", cli_json_time(s[i].expires_at_ms));
      cli_json_set(o, "lease_ms", json_integer(s[i].lease_ms));
      cli_json_set(o, "claimed", json_integer(s[i].claimed));
      cli_json_set(o, "in_flight", json_integer(s[i].in_flight));
      cli_json_set(o, "done", json_integer(s[i].done));
      cli_json_set(o, "failed", json_integer(s[i].failed));
      cli_json_set(o, "expired", json_boolean(s[i].expired));
      json_t *parts = cli_json_object();
      for (size_t q = 0; q < s[i].nparts; q++) {
        json_t *l = json_array();
        if (l == NULL) cli_oom();
        for (size_t k = 0; k < s[i].parts[q].n; k++)
          if (json_array_append_new(l, json_integer(s[i].parts[q].parts[k])) != 0) cli_oom();
        cli_json_set(parts, s[i].parts[q].queue, l);
      }
      cli_json_set(o, "parts", parts);
    }
    json_t *doc = cli_json_object();
    cli_json_set(doc, "sessions", list);
    cli_json_print(doc);
    return;
  }
  static const struct cli_column cols[] = {
      {"ID", 0},      {"NAME", 0},      {"HOST", 0},    {"PID", 1},
      {"EPOCH", 1},   {"AGE", 1},       {"HEARTBEAT", 0}, {"EXPIRES", 0},
      {"LEASE", 1},   {"CLAIMED", 1},   {"IN FLIGHT", 1}, {"DONE", 1},
      {"FAILED", 1},  {"EXPIRED", 0},   {"PARTS", 0}};
  struct cli_table t;
  cli_table_init(&t, cols, sizeof cols / sizeof cols[0]);
  char a[CLI_TIME_BUF], b[CLI_TIME_BUF], c[CLI_TIME_BUF], d[CLI_TIME_BUF];
  for (size_t i = 0; i < n; i++) {
    char *name = cli_escape_str(s[i].name, "-");
    char *host = cli_escape_str(s[i].host, "-");
    cli_table_cell(&t, "%s", s[i].id);
    cli_table_cell(&t, "%s", name);
    cli_table_cell(&t, "%s", host);
    cli_table_cell(&t, "%lld", (long long)s[i].pid);
    cli_table_cell(&t, "%lld", (long long)s[i].epoch);
    cli_table_cell(&t, "%s", cli_fmt_age(a, now_ms - s[i].started_at_ms));
    cli_table_cell(&t, "%s", cli_fmt_relative(b, s[i].heartbeat_at_ms, now_ms));
    cli_table_cell(&t, "%s", cli_fmt_relative(c, s[i].expires_at_ms, now_ms));
    cli_table_cell(&t, "%s", cli_fmt_duration(d, s[i].lease_ms));
    cli_table_cell(&t, "%lld", (long long)s[i].claimed);
    cli_table_cell(&t, "%lld", (long long)s[i].in_flight);
    cli_table_cell(&t, "%lld", (long long)s[i].done);
    cli_table_cell(&t, "%lld", (long long)s[i].failed);
    cli_table_cell(&t, "%s", s[i].expired ? "yes" : "no");
    char *parts = parts_text(&s[i]);
    cli_table_cell(&t, "%s", parts);
    free(parts);
    free(name);
    free(host);
  }
  cli_table_print(&t);
  cli_table_release(&t);
}

static int run(int argc, char **argv) {
  const struct cli_option options[] = {CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (cli_check_args(argc, argv, 0, "no arguments")) return CLI_EXIT_USAGE;

  jobq *db;
  if ((rc = cli_open_readonly(&db)) != 0) return rc;
  int64_t now_ms;
  if ((rc = cli_db_now(db, &now_ms)) == 0) {
    jobq_session_info *s;
    size_t n;
    int err = jobq_sessions(db, &s, &n);
    if (err != JOBQ_OK) {
      rc = cli_lib_error(db, err);
    } else {
      print_sessions(s, n, now_ms);
      jobq_sessions_free(s, n);
    }
  }
  jobq_close(db);
  return rc;
}

const struct cli_command cli_cmd_sessions = {
    "sessions", "the workers' sessions and their leases", run};
