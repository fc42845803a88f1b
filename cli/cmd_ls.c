/*
 * cmd_ls.c - `jobq ls`: lists jobs in id order, of one queue and one
 * state or all, a page at a time (--limit, --after).  A ready job whose
 * run_at is still ahead on the database clock is shown as "scheduled".
 */
#include <stdlib.h>
#include <string.h>

#include "builtin.h"

static const char usage[] =
    "usage: jobq ls [-q QUEUE] [--state STATE] [--limit N] [--after ID] [--json]\n"
    "\n"
    "Lists jobs by id: unfinished ones and the archived ones not yet pruned.\n"
    "STATE is one of ready, scheduled, running, waiting, pending, done, dead,\n"
    "cancelled ('ready' means ready to run now; 'scheduled' ready but due\n"
    "later).  At most --limit jobs are listed (default 100); when there are\n"
    "more, stderr says which --after shows the next page.\n";

#define LIMIT_MAX 1000000

/* Appends the jobs of page that keep wants to *all (moving them). */
static void take(jobq_job_info **all, size_t *n, size_t *cap,
                 jobq_job_info *page, size_t npage, int due_only,
                 int64_t now_ms, size_t want) {
  for (size_t i = 0; i < npage && *n < want; i++) {
    if (due_only && page[i].run_at_ms > now_ms) continue;
    if (*n == *cap) {
      *cap = *cap ? *cap * 2 : 64;
      *all = cli_xrealloc(*all, *cap * sizeof **all);
    }
    (*all)[(*n)++] = page[i];
    memset(&page[i], 0, sizeof page[i]); /* now owned by *all */
  }
}

/*
 * Fetches up to want jobs, a page of at most LIMIT_MAX at a time.
 * jobq_list() has no "ready and due" filter, so for --state ready the
 * pages are read on, past the scheduled jobs, until want due ones are
 * found or the jobs run out.
 */
static int fetch(jobq *db, jobq_list_opts lo, int due_only, int64_t now_ms,
                 size_t want, jobq_job_info **all, size_t *n) {
  size_t cap = 0;
  *all = NULL;
  *n = 0;
  while (*n < want) {
    jobq_job_info *page;
    size_t npage;
    lo.limit = due_only ? want : want - *n;
    if (lo.limit > LIMIT_MAX) lo.limit = LIMIT_MAX;
    int rc = jobq_list(db, &lo, &page, &npage);
    if (rc != JOBQ_OK) return rc;
    if (npage > 0) lo.after_id = page[npage - 1].id;
    take(all, n, &cap, page, npage, due_only, now_ms, want);
    jobq_info_free(page, npage);
    if (npage < lo.limit) break;
  }
  return JOBQ_OK;
}

static void print_jobs(const jobq_job_info *jobs, size_t n, int64_t now_ms,
                       int64_t next_after) {
  if (cli_global.json) {
    json_t *list = json_array();
    if (list == NULL) cli_oom();
    for (size_t i = 0; i < n; i++)
      if (json_array_append_new(list, cli_job_json(&jobs[i], now_ms, 0)) != 0)
        cli_oom();
    json_t *doc = cli_json_object();
    cli_json_set(doc, "jobs", list);
    cli_json_set(doc, "next_after", next_after ? json_integer(next_after) : json_null());
    cli_json_print(doc);
    return;
  }
  static const struct cli_column cols[] = {
      {"ID", 1},       {"QUEUE", 0}, {"STATE", 0}, {"PRI", 1},
      {"ATTEMPTS", 1}, {"KEY", 0},   {"WHEN", 0},  {"ERROR", 0}};
  struct cli_table t;
  cli_table_init(&t, cols, sizeof cols / sizeof cols[0]);
  /* On a terminal, long errors are cut to keep one line per job. */
  int width = cli_term_width();
  size_t error_max = width == 0 ? 0 : width > 130 ? (size_t)width - 90 : 40;
  for (size_t i = 0; i < n; i++) {
    const jobq_job_info *j = &jobs[i];
    const char *state = cli_job_state(j, now_ms);
    char when[CLI_TIME_BUF];
    /* Scheduled: when it is due; otherwise how long it has been in its
     * state: since put, claimed or finished. */
    int64_t since = j->finished_at_ms ? j->finished_at_ms
                    : j->state == JOBQ_STATE_RUNNING && j->claimed_at_ms
                        ? j->claimed_at_ms
                        : j->created_at_ms;
    if (strcmp(state, "scheduled") == 0)
      cli_fmt_relative(when, j->run_at_ms, now_ms);
    else
      cli_fmt_relative(when, since, now_ms);
    char *key = cli_escape_str(j->key, "-");
    char *err = cli_escape_str(j->last_error, "-");
    cli_cut(err, error_max);
    cli_table_cell(&t, "%lld", (long long)j->id);
    cli_table_cell(&t, "%s", j->queue);
    cli_table_cell(&t, "%s", state);
    cli_table_cell(&t, "%d", j->priority);
    cli_table_cell(&t, "%d/%d", j->attempts, j->max_attempts);
    cli_table_cell(&t, "%s", key);
    cli_table_cell(&t, "%s", when);
    cli_table_cell(&t, "%s", err);
    free(key);
    free(err);
  }
  cli_table_print(&t);
  cli_table_release(&t);
}

static int run(int argc, char **argv) {
  const char *queue = NULL, *state = NULL, *limit = NULL, *after = NULL;
  const struct cli_option options[] = {
      CLI_STRING('q', "queue", &queue, "QUEUE", "only this queue's jobs"),
      CLI_STRING('s', "state", &state, "STATE",
                 "only jobs in STATE: ready, scheduled, running, waiting, pending, "
                 "done, dead, cancelled"),
      CLI_STRING('n', "limit", &limit, "N", "at most N jobs (default 100)"),
      CLI_STRING(0, "after", &after, "ID", "only jobs with an id above ID (paging)"),
      CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (cli_check_args(argc, argv, 0, "no arguments (filter with -q and --state)"))
    return CLI_EXIT_USAGE;
  jobq_list_opts lo;
  memset(&lo, 0, sizeof lo);
  int due_only = 0;
  int64_t v = 100;
  if (queue != NULL) {
    if (cli_check_queue("--queue", queue)) return CLI_EXIT_USAGE;
    lo.queue = queue;
  }
  if (state != NULL) {
    char shown[CLI_QUOTE_BUF];
    lo.state = jobq_state_parse(state);
    if (lo.state == 0) {
      cli_error("invalid --state '%s': expected one of ready, scheduled, "
                "running, waiting, pending, done, dead, cancelled",
                cli_quote(shown, state));
      return CLI_EXIT_USAGE;
    }
    lo.scheduled = strcmp(state, "scheduled") == 0;
    due_only = strcmp(state, "ready") == 0;
  }
  if (limit != NULL && cli_parse_int("--limit", limit, 1, LIMIT_MAX, &v))
    return CLI_EXIT_USAGE;
  size_t want = (size_t)v;
  if (after != NULL && cli_parse_int("--after", after, 0, INT64_MAX, &lo.after_id))
    return CLI_EXIT_USAGE;

  jobq *db;
  if ((rc = cli_open_readonly(&db)) != 0) return rc;
  int64_t now_ms;
  jobq_job_info *jobs = NULL;
  size_t n = 0;
  if ((rc = cli_db_now(db, &now_ms)) == 0) {
    /* One more than asked says whether there is a next page. */
    int err = fetch(db, lo, due_only, now_ms, want + 1, &jobs, &n);
    if (err != JOBQ_OK) rc = cli_lib_error(db, err);
  }
  if (rc == 0) {
    int64_t next_after = n > want ? jobs[want - 1].id : 0;
    print_jobs(jobs, n > want ? want : n, now_ms, next_after);
    if (next_after != 0 && !cli_global.json)
      cli_error("more jobs follow: see them with --after %lld", (long long)next_after);
  }
  jobq_info_free(jobs, n);
  jobq_close(db);
  return rc;
}

const struct cli_command cli_cmd_ls = {
    "ls", "list jobs by queue and state", run};
