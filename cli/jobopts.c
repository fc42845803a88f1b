/*
 * jobopts.c - the options that describe a job, checked: see jobopts.h.
 */
#include <string.h>

#include "jobopts.h"
#include "output.h"
#include "util.h"

int cli_check_key(const char *what, const char *key) {
  char shown[CLI_QUOTE_BUF];
  size_t n = strlen(key);
  if (n == 0 || n > JOBQ_KEY_MAX || !cli_utf8_valid(key, n)) {
    cli_error("invalid %s '%s': expected 1 to %d bytes of UTF-8 text", what,
              cli_quote(shown, key), JOBQ_KEY_MAX);
    return CLI_EXIT_USAGE;
  }
  return 0;
}

int cli_job_check(const struct cli_job_args *a, jobq_put_opts *o) {
  int64_t v;
  jobq_put_opts_init(o);
  if (a->queue != NULL) {
    if (cli_check_queue("--queue", a->queue)) return CLI_EXIT_USAGE;
    o->queue = a->queue;
  }
  if (a->priority != NULL) {
    if (cli_parse_int("--priority", a->priority, JOBQ_PRIORITY_MIN,
                      JOBQ_PRIORITY_MAX, &v))
      return CLI_EXIT_USAGE;
    o->priority = (int)v;
  }
  if (a->delay != NULL && a->at != NULL) {
    cli_error("--delay and --at were both given: expected one of them");
    return CLI_EXIT_USAGE;
  }
  if (a->delay != NULL &&
      cli_parse_duration("--delay", a->delay, 0, JOBQ_DURATION_MAX_MS, &o->delay_ms))
    return CLI_EXIT_USAGE;
  if (a->at != NULL && cli_parse_time("--at", a->at, &o->run_at_ms))
    return CLI_EXIT_USAGE;
  if (a->key != NULL) {
    if (cli_check_key("--key", a->key)) return CLI_EXIT_USAGE;
    o->key = a->key;
  }
  if (a->barrier && a->key != NULL) {
    cli_error("--barrier and --key were both given: a barrier cannot have an "
              "ordering key");
    return CLI_EXIT_USAGE;
  }
  o->barrier = a->barrier;
  if (a->unique != NULL) {
    if (cli_check_key("--unique", a->unique)) return CLI_EXIT_USAGE;
    o->unique_key = a->unique;
  }
  if (a->max_attempts != NULL) {
    if (cli_parse_int("--max-attempts", a->max_attempts, 1, JOBQ_ATTEMPTS_MAX,
                      &v))
      return CLI_EXIT_USAGE;
    o->max_attempts = (int)v;
  }
  if (a->timeout != NULL &&
      cli_parse_duration("--timeout", a->timeout, 0, JOBQ_DURATION_MAX_MS,
                         &o->timeout_ms))
    return CLI_EXIT_USAGE;
  if (a->backoff != NULL &&
      cli_parse_duration("--backoff", a->backoff, 0, JOBQ_BACKOFF_CAP_MS,
                         &o->backoff_ms))
    return CLI_EXIT_USAGE;
  return 0;
}

