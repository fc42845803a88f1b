/*
 * cmd_work.c - `jobq work`: the foreman.  Checks every option and the
 * command to run, then hands over to foreman/ (fm_run), which claims jobs
 * and runs them as local processes until a signal stops it.  Options end
 * at the command (or "--"), so that the command's own options are left to
 * it.  `jobq work --internal-guard` is the foreman's guard process
 * (foreman/guard.c), not for people.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../foreman/foreman.h"
#include "builtin.h"

static const char usage[] =
    "usage: jobq work [options] [--] COMMAND [ARGS...]\n"
    "\n"
    "Claims jobs and runs COMMAND for each one, CONCURRENCY at a time: no\n"
    "shell, the payload on stdin, and JOBQ_JOB_ID, JOBQ_QUEUE, JOBQ_ATTEMPT,\n"
    "JOBQ_MAX_ATTEMPTS, JOBQ_KEY, JOBQ_CLAIM and JOBQ_PREV_LOST in the\n"
    "environment (never the database URL).  Exit status 0: done, stdout is\n"
    "the result; 75: retry later; anything else, or a signal: failed, the\n"
    "tail of stderr is the error.  With --persistent, CONCURRENCY long-lived\n"
    "COMMAND processes are fed jobs over a line protocol on stdin and stdout\n"
    "instead (docs/worker-protocol.md).  With its heartbeat it puts the jobs\n"
    "of the periodic schedules due (jobq cron), unless --no-cron.\n"
    "\n"
    "SIGTERM or SIGINT stops gracefully: claimed jobs go back at once, running\n"
    "ones get --grace to finish; a second signal stops them at once.  Options\n"
    "end at COMMAND, so its own options are its own.\n"
    "\n"
    "Keep the database password off the command line: --db-file FILE,\n"
    "$JOBQ_DB_FILE or a systemd credential (the foreman blanks a --db\n"
    "password in its arguments, but only once it has started).\n"
    "\n"
    "The foreman keeps the last completions acknowledged to it in a state\n"
    "file (--state), and a foreman started later refuses a database that has\n"
    "lost them (restored from an older backup, or failed over to a replica\n"
    "that had not seen them) until 'jobq epoch bump'.\n";

#define MAX_CONCURRENCY 1024
#define MAX_BATCH 1000
#define HOUR_MS (3600LL * 1000)
#define DAY_MS (24 * HOUR_MS)

struct work_args {
  struct cli_list queues;
  const char *concurrency, *batch, *prefetch, *lease, *timeout, *grace;
  const char *kill_after, *poll, *fleet_polls, *ack_delay, *max_output, *name, *log_format, *user, *state;
  const char *connections;
  int persistent, until_empty, verbose, log_times, no_cgroups, no_cron;
};

/* The number of CPUs, the default concurrency. */
static int cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > MAX_CONCURRENCY ? MAX_CONCURRENCY : (int)n;
}

/* Whether path is a regular file we may execute; errno says why not. */
static int runnable(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return 0;
  if (S_ISDIR(st.st_mode)) {
    errno = EISDIR;
    return 0;
  }
  return access(path, X_OK) == 0;
}

/*
 * The command must exist now: a typo would otherwise fail every job.  On
 * success *file is the file to run (new; free()): cmd itself when it has
 * a '/', else where PATH has it, found once instead of for every job.
 */
static int find_command(const char *cmd, char **file) {
  char shown[CLI_QUOTE_BUF];
  *file = NULL;
  if (cmd[0] == '\0') {
    cli_error("invalid command '': expected a program name or path");
    return CLI_EXIT_USAGE;
  }
  if (strchr(cmd, '/') != NULL) {
    if (runnable(cmd)) {
      *file = cli_xstrdup(cmd);
      return 0;
    }
    cli_error("cannot run command '%s': %s: expected an executable file",
              cli_quote(shown, cmd), cli_strerror(errno));
    return CLI_EXIT_USAGE;
  }
  const char *path = getenv("PATH");
  if (path == NULL || path[0] == '\0') path = "/usr/local/bin:/usr/bin:/bin";
  while (*path != '\0') {
    size_t len = strcspn(path, ":");
    size_t size = len + strlen(cmd) + 3;
    char *full = cli_xmalloc(size);
    if (len == 0)
      snprintf(full, size, "./%s", cmd);
    else
      snprintf(full, size, "%.*s/%s", (int)len, path, cmd);
    if (runnable(full)) {
      *file = full;
      return 0;
    }
    free(full);
    path += len;
    if (*path == ':') path++;
  }
  cli_error("command '%s' not found in PATH: expected a program name in PATH "
            "or a path to an executable",
            cli_quote(shown, cmd));
  return CLI_EXIT_USAGE;
}

static int count(const char *what, const char *text, int64_t min, int64_t max,
                 int *out) {
  int64_t v;
  if (text == NULL) return 0;
  if (cli_parse_int(what, text, min, max, &v)) return CLI_EXIT_USAGE;
  *out = (int)v;
  return 0;
}

static int duration(const char *what, const char *text, int64_t min,
                    int64_t max, int64_t *out) {
  if (text == NULL) return 0;
  return cli_parse_duration(what, text, min, max, out);
}

/* --user USER: whom jobs run as, when not the foreman's user; 0 or 2
 * after a message.  *user is filled (fm_user_release) when jobs change
 * user. */
static int check_user(const char *name, struct fm_user *user, int *change) {
  char shown[CLI_QUOTE_BUF], why[256];
  *change = 0;
  if (name == NULL) return 0;
  if (fm_user_lookup(name, user, why, sizeof why) != 0) {
    cli_error("invalid --user '%s': %s: expected a user name or id",
              cli_quote(shown, name), why);
    return CLI_EXIT_USAGE;
  }
  if (user->uid == geteuid()) {
    fm_user_release(user); /* already that user */
    return 0;
  }
  if (geteuid() != 0) {
    cli_error("invalid --user '%s': only a foreman run as root can run jobs as "
              "another user",
              cli_quote(shown, name));
    fm_user_release(user);
    return CLI_EXIT_USAGE;
  }
  *change = 1;
  return 0;
}

/* Checks every option and fills cfg; 0 or 2 after a message. */
static int check(const struct work_args *a, struct fm_config *cfg) {
  for (size_t i = 0; i < a->queues.n; i++)
    if (cli_check_queue("--queue", a->queues.items[i])) return CLI_EXIT_USAGE;
  cfg->queues = a->queues.items;
  cfg->nq = a->queues.n;
  cfg->concurrency = cpus();
  if (count("--concurrency", a->concurrency, 1, MAX_CONCURRENCY,
            &cfg->concurrency))
    return CLI_EXIT_USAGE;
  /* By default the prefetch adapts: from a quarter of the concurrency up
   * to what the slots get through in about 50 ms (the foreman's bound),
   * so short jobs get few, big claims. */
  cfg->prefetch = (cfg->concurrency + 3) / 4;
  cfg->prefetch_max = MAX_BATCH;
  if (a->prefetch != NULL) {
    if (count("--prefetch", a->prefetch, 0, MAX_BATCH, &cfg->prefetch))
      return CLI_EXIT_USAGE;
    cfg->prefetch_max = cfg->prefetch;
  }
  cfg->batch = cfg->concurrency + cfg->prefetch_max;
  if (cfg->batch > MAX_BATCH) cfg->batch = MAX_BATCH;
  if (count("--batch", a->batch, 1, MAX_BATCH, &cfg->batch)) return CLI_EXIT_USAGE;
  cfg->fleet_polls = 20;
  if (count("--fleet-polls", a->fleet_polls, 0, 10000, &cfg->fleet_polls))
    return CLI_EXIT_USAGE;
  cfg->lease_ms = JOBQ_DEFAULT_LEASE_MS;
  cfg->grace_ms = 30000;
  cfg->kill_after_ms = 5000;
  cfg->poll_ms = 1000;
  cfg->ack_delay_ms = 2;
  if (duration("--lease", a->lease, 100, HOUR_MS, &cfg->lease_ms) ||
      duration("--timeout", a->timeout, 1, 365 * DAY_MS, &cfg->timeout_ms) ||
      duration("--grace", a->grace, 0, DAY_MS, &cfg->grace_ms) ||
      duration("--kill-after", a->kill_after, 0, HOUR_MS, &cfg->kill_after_ms) ||
      duration("--poll", a->poll, 10, HOUR_MS, &cfg->poll_ms) ||
      duration("--ack-delay", a->ack_delay, 0, 1000, &cfg->ack_delay_ms))
    return CLI_EXIT_USAGE;
  if (cli_check_max_payload()) return CLI_EXIT_USAGE;
  size_t limit = cli_payload_limit();
  cfg->max_output = limit;
  if (a->max_output != NULL) {
    int64_t v;
    if (cli_parse_size("--max-output", a->max_output, 0, (int64_t)1 << 30, &v))
      return CLI_EXIT_USAGE;
    cfg->max_output = (size_t)v;
  }
  /* The handle must take results as large as --max-output. */
  cfg->max_payload = cfg->max_output > limit ? cfg->max_output : limit;
  if (a->name != NULL && (a->name[0] == '\0' || strlen(a->name) > 127)) {
    char shown[CLI_QUOTE_BUF];
    cli_error("invalid --name '%s': expected 1 to 127 bytes",
              cli_quote(shown, a->name));
    return CLI_EXIT_USAGE;
  }
  cfg->persistent = a->persistent;
  cfg->no_cgroups = a->no_cgroups;
  cfg->until_empty = a->until_empty;
  cfg->verbose = a->verbose;
  cfg->log_times = a->log_times;
  cfg->no_cron = a->no_cron;
  if (a->log_format != NULL && strcmp(a->log_format, "json") != 0 &&
      strcmp(a->log_format, "text") != 0) {
    char shown[CLI_QUOTE_BUF];
    cli_error("invalid --log-format '%s': expected text or json", cli_quote(shown, a->log_format));
    return CLI_EXIT_USAGE;
  }
  cfg->log_json = a->log_format != NULL && strcmp(a->log_format, "json") == 0;
  /* One by default: on the 2-core machine of docs/benchmarks.md, more
   * drained a little faster on PostgreSQL only (the foreman and its
   * workers take a share of the cores themselves), and each costs the
   * server a connection. */
  cfg->connections = 1;
  if (count("--connections", a->connections, 1, FM_CONN_MAX, &cfg->connections))
    return CLI_EXIT_USAGE;
  return 0;
}

/* "work", or "work:QUEUE,QUEUE" for `jobq sessions`. */
static void default_name(const struct fm_config *cfg, char *buf, size_t size) {
  size_t o = (size_t)snprintf(buf, size, "work");
  for (size_t i = 0; i < cfg->nq && o + 1 < size; i++)
    o += (size_t)snprintf(buf + o, size - o, "%c%s", i ? ',' : ':', cfg->queues[i]);
  if (o >= size) buf[size - 1] = '\0';
}

static int run(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "--internal-guard") == 0)
    return fm_guard_main(argc >= 3 ? argv[2] : NULL);
  struct work_args a;
  memset(&a, 0, sizeof a);
  const struct cli_option opts[] = {
      CLI_LIST('q', "queue", &a.queues, "QUEUE",
               "claim from QUEUE; repeat for more (default: every queue)"),
      CLI_STRING('c', "concurrency", &a.concurrency, "N",
                 "jobs (or persistent workers) at once, 1 to 1024 (default: "
                 "the number of CPUs)"),
      CLI_STRING(0, "batch", &a.batch, "N",
                 "most jobs per claim, 1 to 1000 (default 1000)"),
      CLI_STRING(0, "prefetch", &a.prefetch, "N",
                 "claimed jobs kept ready for the next free slot, 0 to 1000 "
                 "(default: adapts from a quarter of the concurrency up to "
                 "what the slots run in about 50ms)"),
      CLI_STRING(0, "lease", &a.lease, "D",
                 "the session's lease, 100ms to 1h (default 5s); heartbeats "
                 "every lease/3"),
      CLI_STRING(0, "timeout", &a.timeout, "D",
                 "longest run of a job (default: none; a job's own timeout "
                 "applies too, the shorter wins)"),
      CLI_STRING(0, "grace", &a.grace, "D",
                 "on SIGTERM, how long running jobs may finish (default 30s)"),
      CLI_STRING(0, "kill-after", &a.kill_after, "D",
                 "from SIGTERM to SIGKILL when a job is stopped (default 5s)"),
      CLI_STRING(0, "poll", &a.poll, "D",
                 "the longest wait between claims when idle without "
                 "wake-ups, 10ms to 1h (default 1s)"),
      CLI_STRING(0, "fleet-polls", &a.fleet_polls, "N",
                 "without wake-ups, the polls a second that all live "
                 "sessions make together, 0 to 10000 (default 20; 0: each "
                 "polls every --poll): an idle foreman of a large fleet "
                 "polls less often, up to 30 times --poll"),
      CLI_STRING(0, "ack-delay", &a.ack_delay, "D",
                 "how long an outcome may wait to be recorded with others, 0 "
                 "to 1s (default 2ms)"),
      CLI_STRING(0, "max-output", &a.max_output, "SIZE",
                 "the largest result (stdout) of a job, like 64KiB (default: "
                 "the max payload, 1MiB); a job that writes more is stopped "
                 "and fails"),
      CLI_STRING(0, "connections", &a.connections, "N",
                 "most database connections for claims and outcomes, 1 to 8, "
                 "all under the one session; more open only while the ones "
                 "open are all busy (default 1); wake-ups take one more"),
      CLI_STRING(0, "name", &a.name, "NAME",
                 "the session's name in 'jobq sessions' (default: work and "
                 "the queues)"),
      CLI_STRING(0, "user", &a.user, "USER",
                 "run jobs as USER, with its groups (the foreman runs as "
                 "root)"),
      CLI_FLAG(0, "no-cgroups", &a.no_cgroups,
               "run jobs without a cgroup of their own: a job that leaves "
               "its process group is then not stopped with it"),
      CLI_STRING(0, "state", &a.state, "FILE",
                 "where this machine's workers keep what they saw of each "
                 "database, to refuse one that lost their writes (default: "
                 "$XDG_STATE_HOME/jobq/state.json, /var/lib/jobq/state.json "
                 "for root, else ~/.local/state/jobq/state.json)"),
      CLI_FLAG(0, "persistent", &a.persistent,
               "run CONCURRENCY long-lived workers fed over the line protocol"),
      CLI_FLAG(0, "until-empty", &a.until_empty,
               "exit 0 once the queues have nothing ready, scheduled, waiting, "
               "pending or running (1 at once on an error that does not pass)"),
      CLI_FLAG(0, "no-cron", &a.no_cron,
               "do not put the jobs of periodic schedules (jobq cron) when due"),
      CLI_FLAG('v', "verbose", &a.verbose, "log one line per finished job"),
      CLI_FLAG(0, "log-times", &a.log_times,
               "start each log line with the time (UTC) and the pid"),
      CLI_STRING(0, "log-format", &a.log_format, "FORMAT",
                 "text (default), or json: one JSON object a line with time, "
                 "level, event, and for a job its id, queue, attempt, "
                 "duration_ms and outcome"),
      CLI_END};
  int next;
  int rc = cli_parse_options_head(usage, opts, argc, argv, &next);
  if (rc != CLI_PARSED) {
    free(a.queues.items);
    return rc;
  }
  struct fm_config cfg;
  memset(&cfg, 0, sizeof cfg);
  rc = check(&a, &cfg);
  if (rc == 0 && next >= argc) {
    cli_error("missing the command to run: expected jobq work [options] -- "
              "COMMAND [ARGS...]");
    rc = CLI_EXIT_USAGE;
  }
  struct fm_user user;
  int change_user = 0;
  if (rc == 0) rc = check_user(a.user, &user, &change_user);
  char *file = NULL;
  if (rc == 0) rc = find_command(argv[next], &file);
  if (rc != 0) {
    if (change_user) fm_user_release(&user);
    free(a.queues.items);
    return rc;
  }
  cfg.user = change_user ? &user : NULL;
  char name[128], state[4096];
  if (a.state != NULL && a.state[0] == '\0') {
    cli_error("invalid --state '': expected a file name");
    if (change_user) fm_user_release(&user);
    free(file);
    free(a.queues.items);
    return CLI_EXIT_USAGE;
  }
  if (a.state != NULL)
    cfg.state = a.state;
  else if (fm_state_default(state, sizeof state) == 0)
    cfg.state = state;
  default_name(&cfg, name, sizeof name);
  cfg.name = a.name != NULL ? a.name : name;
  /* `ps` shows a long-running foreman's arguments; the URL lives on in a
   * copy, which cli_db_url() gives from then on. */
  cli_hide_db_password();
  cfg.url = cli_db_url();
  cfg.argv = argv + next;
  cfg.file = file;
  fflush(stdout);
  rc = fm_run(&cfg);
  if (change_user) fm_user_release(&user);
  free(file);
  free(a.queues.items);
  return rc;
}

const struct cli_command cli_cmd_work = {
    "work", "run jobs as local processes: the foreman", run};
