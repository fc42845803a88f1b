/*
 * cmd_policy.c - `jobq policy`: shows or sets what happens to a queue's
 * ordering key when the job at its head goes dead: "block" (the key waits
 * for an operator to retry or cancel that job) or "skip" (the next job of
 * the key proceeds).
 */
#include <string.h>

#include "builtin.h"

static const char usage[] =
    "usage: jobq policy QUEUE [block|skip]\n"
    "\n"
    "Sets the queue's ordering-key policy for a job at the head of its key\n"
    "that goes dead: 'block' (the default: the key's later jobs wait until\n"
    "an operator retries or cancels it) or 'skip' (they proceed).  Prints\n"
    "'QUEUE: key policy POLICY'.  Without a policy, prints the current one.\n";

/* The queue's policy as jobq_stats reports it ("block" for a queue that
 * was never used). */
static int current(jobq *db, const char *queue, char *out, size_t len) {
  jobq_queue_stats *st;
  size_t n;
  int rc = jobq_stats(db, &st, &n);
  if (rc != JOBQ_OK) return rc;
  snprintf(out, len, "block");
  for (size_t i = 0; i < n; i++)
    if (strcmp(st[i].name, queue) == 0 && st[i].key_policy != NULL)
      snprintf(out, len, "%s", st[i].key_policy);
  jobq_stats_free(st, n);
  return JOBQ_OK;
}

static int run(int argc, char **argv) {
  const struct cli_option options[] = {CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  char shown[CLI_QUOTE_BUF];
  if (argc < 2) {
    cli_error("missing queue: expected 'jobq policy QUEUE block|skip'");
    return CLI_EXIT_USAGE;
  }
  if (cli_check_args(argc, argv, 2, "'jobq policy QUEUE block|skip'"))
    return CLI_EXIT_USAGE;
  const char *queue = argv[1], *policy = argc == 3 ? argv[2] : NULL;
  if (cli_check_queue("queue name", queue)) return CLI_EXIT_USAGE;
  if (policy != NULL && strcmp(policy, "block") != 0 && strcmp(policy, "skip") != 0) {
    cli_error("invalid policy '%s': expected 'block' or 'skip'",
              cli_quote(shown, policy));
    return CLI_EXIT_USAGE;
  }

  jobq *db;
  if ((rc = cli_open(&db)) != 0) return rc;
  char current_policy[16];
  if (policy != NULL) {
    rc = jobq_set_key_policy(db, queue, policy);
    snprintf(current_policy, sizeof current_policy, "%s", policy);
  } else {
    rc = current(db, queue, current_policy, sizeof current_policy);
  }
  if (rc != JOBQ_OK) {
    rc = cli_lib_error(db, rc);
  } else if (cli_global.json) {
    json_t *o = cli_json_object();
    cli_json_set(o, "queue", json_string(queue));
    cli_json_set(o, "key_policy", json_string(current_policy));
    cli_json_print(o);
  } else {
    printf("%s: key policy %s\n", queue, current_policy);
  }
  jobq_close(db);
  return rc;
}

const struct cli_command cli_cmd_policy = {
    "policy", "show or set a queue's policy for a dead head of a key", run};
