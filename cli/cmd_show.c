/*
 * cmd_show.c - `jobq show`: every field of one job, unfinished or
 * archived.  Payload and result are shown as text when they are plain
 * UTF-8, else escaped or in base64 with a note saying so.
 */
#include <stdlib.h>
#include <string.h>

#include "builtin.h"

static const char usage[] =
    "usage: jobq show ID [--json]\n"
    "\n"
    "Prints every field of the job: state, queue, priority, when it runs,\n"
    "key, attempts, timings (RFC 3339, UTC), its session and claim while\n"
    "running, the last error, the payload and, once done, the result, then\n"
    "the jobs it was put after (parents) and those put after it (children)\n"
    "with their states.\n"
    "Payloads that are not plain text are shown escaped (UTF-8 with control\n"
    "characters) or in base64 (other bytes), with a note.  With --json, a\n"
    "payload that is not UTF-8 (or holds NUL) is 'payload_base64' instead\n"
    "of 'payload'; the same goes for the result.\n";

/* One of payload or result: text, escaped, or base64, with a note. */
static void field_bytes(const char *label, const void *data, size_t len) {
  if (data == NULL) {
    cli_field(label, "-");
  } else if (len == 0) {
    cli_field(label, "(empty)");
  } else if (cli_is_plain_text(data, len)) {
    cli_field(label, "%s", (const char *)data);
  } else if (cli_utf8_valid(data, len)) {
    char *e = cli_escape(data, len);
    cli_field(label, "%s  (%zu bytes, not plain text: shown escaped)", e, len);
    free(e);
  } else {
    char *b = cli_base64(data, len);
    cli_field(label, "%s  (%zu bytes, not UTF-8: shown as base64)", b, len);
    free(b);
  }
}

/* A time field: RFC 3339 and how long ago or ahead, or "-" when 0. */
static void field_time(const char *label, int64_t ms, int64_t now_ms) {
  char t[CLI_TIME_BUF], rel[CLI_TIME_BUF];
  if (ms == 0)
    cli_field(label, "-");
  else
    cli_field(label, "%s (%s)", cli_fmt_time(t, ms), cli_fmt_relative(rel, ms, now_ms));
}

/* A text field that may hold anything: escaped to one line, "-" when
 * NULL. */
static void field_text(const char *label, const char *s) {
  char *e = cli_escape_str(s, "-");
  cli_field(label, "%s", e);
  free(e);
}

static void print_job(const jobq_job_info *j, int64_t now_ms) {
  char d[CLI_TIME_BUF];
  cli_field("id", "%lld", (long long)j->id);
  cli_field("queue", "%s", j->queue);
  cli_field("state", "%s", cli_job_state(j, now_ms));
  cli_field("priority", "%d", j->priority);
  field_time("run at", j->run_at_ms, now_ms);
  field_text("key", j->key);
  if (j->part >= 0) cli_field("part", "%d", j->part);
  cli_field("barrier", "%s", j->barrier ? "yes" : "no");
  field_text("unique key", j->unique_key);
  cli_field("attempts", "%d of %d", j->attempts, j->max_attempts);
  cli_field("timeout", "%s", j->timeout_ms ? cli_fmt_duration(d, j->timeout_ms) : "none");
  cli_field("backoff", "%s", cli_fmt_duration(d, j->backoff_ms));
  field_time("created at", j->created_at_ms, now_ms);
  field_time("claimed at", j->claimed_at_ms, now_ms);
  field_time("finished at", j->finished_at_ms, now_ms);
  field_text("session", j->session);
  field_text("claim", j->claim);
  cli_field("cancel requested", "%s", j->cancel_requested ? "yes" : "no");
  cli_field("previous lost", "%s", j->prev_lost ? "yes" : "no");
  field_text("last error", j->last_error);
  field_bytes("payload", j->payload, j->payload_len);
  field_bytes("result", j->result, j->result_len);
}

/* The parents or the children (child) of links[0..n), each with its
 * state: "12 done, 15 pending". */
static void field_links(const char *label, const jobq_job_link *l, size_t n, int child) {
  char buf[1024];
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    if (l[i].child != child) continue;
    const char *st = l[i].state ? jobq_state_name(l[i].state) : "pruned";
    int w = snprintf(buf + used, sizeof buf - used, "%s%lld %s", used ? ", " : "",
                     (long long)l[i].id, st);
    if (w < 0 || (size_t)w >= sizeof buf - used) {
      memcpy(buf + sizeof buf - 4, "...", 4);
      used = sizeof buf - 1;
      break;
    }
    used += (size_t)w;
  }
  cli_field(label, "%s", used ? buf : "-");
}

/* The links as JSON: [{"id": 12, "state": "done"}, ...]. */
static json_t *links_json(const jobq_job_link *l, size_t n, int child) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++) {
    if (l[i].child != child) continue;
    json_t *o = cli_json_object();
    cli_json_set(o, "id", json_integer(l[i].id));
    cli_json_set(o, "state", l[i].state ? json_string(jobq_state_name(l[i].state)) : json_null());
    json_array_append_new(a, o);
  }
  return a;
}

static int run(int argc, char **argv) {
  const struct cli_option options[] = {CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (argc < 2) {
    cli_error("missing job id: expected 'jobq show ID'");
    return CLI_EXIT_USAGE;
  }
  if (cli_check_args(argc, argv, 1, "one job id")) return CLI_EXIT_USAGE;
  int64_t id;
  if (cli_parse_id(argv[1], &id)) return CLI_EXIT_USAGE;

  jobq *db;
  if ((rc = cli_open_readonly(&db)) != 0) return rc;
  int64_t now_ms;
  jobq_job_info *job = NULL;
  jobq_job_link *links = NULL;
  size_t nlinks = 0;
  if ((rc = cli_db_now(db, &now_ms)) == 0) {
    int err = jobq_show(db, id, &job);
    if (err == JOBQ_OK) err = jobq_links(db, id, &links, &nlinks);
    if (err != JOBQ_OK) rc = cli_lib_error(db, err);
  }
  if (rc == 0) {
    if (cli_global.json) {
      json_t *doc = cli_job_json(job, now_ms, 1);
      cli_json_set(doc, "after", links_json(links, nlinks, 0));
      cli_json_set(doc, "after_any_outcome",
                   json_boolean(nlinks > 0 && !links[0].child && links[0].any_outcome));
      cli_json_set(doc, "children", links_json(links, nlinks, 1));
      cli_json_print(doc);
    } else {
      print_job(job, now_ms);
      field_links("after", links, nlinks, 0);
      if (nlinks > 0 && !links[0].child && links[0].any_outcome)
        cli_field("after any outcome", "yes");
      field_links("children", links, nlinks, 1);
    }
  }
  free(links);
  jobq_info_free(job, 1);
  jobq_close(db);
  return rc;
}

const struct cli_command cli_cmd_show = {
    "show", "every field of one job, payload and result included", run};
