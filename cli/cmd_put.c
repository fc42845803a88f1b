/*
 * cmd_put.c - `jobq put`: enqueues one job whose payload is an argument
 * or stdin (bytes, NUL included, bounded by the max payload), or with
 * --ndjson many jobs, one JSON object per line, in a single transaction
 * (all or none).  The options describe the job; with --ndjson they are
 * the defaults each line may override.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "builtin.h"
#include "jobopts.h"
#include "ndjson.h"

static const char usage[] =
    "usage: jobq put [options] [PAYLOAD | -]\n"
    "   or: jobq put [options] --ndjson FILE|-\n"
    "\n"
    "Enqueues a job and prints its id.  The payload is PAYLOAD, or stdin\n"
    "when it is absent or '-' (any bytes, up to the max payload).  When\n"
    "--unique names an unfinished job of the queue, nothing is written and\n"
    "that job's id is printed, with a note on stderr.\n"
    "\n"
    "With --ndjson, each line of FILE (or stdin) is one job as a JSON\n"
    "object with the fields queue, payload (or payload_base64), priority,\n"
    "delay, run_at, key, barrier, unique, max_attempts, timeout and backoff;\n"
    "the options below are the defaults of every line.  All the jobs are\n"
    "written in one transaction, or none when a line is wrong.\n";

#define CHUNK_JOBS 1000
#define CHUNK_BYTES (16u << 20)

/* ---------------------------------------------------------------- one job */

static int put_one(jobq_put_opts *o, const char *payload_arg) {
  char *data = NULL;
  size_t len;
  if (payload_arg == NULL || strcmp(payload_arg, "-") == 0) {
    size_t max = cli_payload_limit();
    int r = cli_read_all(stdin, max, &data, &len);
    if (r < 0) {
      cli_error("cannot read the payload from stdin: %s", cli_strerror(errno));
      return CLI_EXIT_ERROR;
    }
    if (r > 0) {
      cli_error("payload on stdin is over the limit of %zu bytes: expected at "
                "most %zu bytes (see --max-payload)",
                max, max);
      return CLI_EXIT_USAGE;
    }
    o->payload = data;
    o->payload_len = len;
  } else {
    o->payload = payload_arg;
    o->payload_len = strlen(payload_arg);
  }

  jobq *db;
  int rc = cli_open(&db);
  if (rc != 0) {
    free(data);
    return rc;
  }
  int64_t id;
  int existed;
  rc = jobq_put(db, o, &id, &existed);
  if (rc != JOBQ_OK) {
    rc = cli_lib_error(db, rc);
  } else {
    if (cli_global.json) {
      json_t *doc = cli_json_object();
      cli_json_set(doc, "id", json_integer(id));
      cli_json_set(doc, "existed", json_boolean(existed));
      cli_json_print(doc);
    } else {
      printf("%lld\n", (long long)id);
    }
    if (existed) {
      char shown[CLI_QUOTE_BUF];
      cli_error("job %lld with unique key '%s' already exists", (long long)id,
                cli_quote(shown, o->unique_key));
    }
  }
  jobq_close(db);
  free(data);
  return rc;
}

/* ---------------------------------------------------------------- NDJSON */

/* The jobs of one chunk (cli/ndjson.c parsed them), the line each came
 * from, and what putting them gave. */
struct chunk {
  struct ndjson_job job[CHUNK_JOBS];
  jobq_put_opts opts[CHUNK_JOBS];
  long line[CHUNK_JOBS];
  int64_t ids[CHUNK_JOBS];
  unsigned char existed[CHUNK_JOBS];
  size_t n, bytes;
};

struct totals {
  int64_t put, existed, first_id, last_id;
};

static void chunk_clear(struct chunk *c) {
  for (size_t i = 0; i < c->n; i++) ndjson_job_release(&c->job[i]);
  c->n = 0;
  c->bytes = 0;
}

/* Adds one line's job to the chunk; 0, or the usage status after a
 * message "line N: ...". */
static int parse_line(struct chunk *c, const char *text, size_t len, long line,
                      const jobq_put_opts *base) {
  char err[512];
  size_t k = c->n;
  int rc = ndjson_parse(text, len, base, &c->job[k], err, sizeof err);
  if (rc != 0) {
    ndjson_job_release(&c->job[k]);
    cli_error("line %ld: %s", line, err);
    return CLI_EXIT_USAGE;
  }
  c->opts[k] = c->job[k].opts;
  c->line[k] = line;
  c->bytes += c->opts[k].payload_len + len;
  c->n++;
  return 0;
}

/* Writes the chunk's jobs inside the open transaction. */
static int flush(jobq *db, struct chunk *c, struct totals *t) {
  if (c->n == 0) return 0;
  int rc = jobq_put_many(db, c->opts, c->n, c->ids, c->existed);
  if (rc != JOBQ_OK) {
    /* "job I: ..." names the index in the chunk: say the line instead. */
    const char *msg = jobq_errmsg(db);
    char *end;
    unsigned long i = strncmp(msg, "job ", 4) == 0 ? strtoul(msg + 4, &end, 10) : 0;
    if (strncmp(msg, "job ", 4) == 0 && end != msg + 4 &&
        strncmp(end, ": ", 2) == 0 && i < c->n) {
      char *rest = cli_escape(end + 2, strlen(end + 2));
      cli_error("line %ld: %s", c->line[i], rest);
      free(rest);
      return cli_exit_code(rc);
    }
    return cli_lib_error(db, rc);
  }
  for (size_t i = 0; i < c->n; i++) {
    if (c->existed[i]) {
      t->existed++;
      continue;
    }
    if (t->put == 0 || c->ids[i] < t->first_id) t->first_id = c->ids[i];
    if (t->put == 0 || c->ids[i] > t->last_id) t->last_id = c->ids[i];
    t->put++;
  }
  chunk_clear(c);
  return 0;
}

static int put_ndjson(const char *path, const jobq_put_opts *base) {
  FILE *f = stdin;
  const char *name = "stdin";
  char shown[CLI_QUOTE_BUF];
  if (strcmp(path, "-") != 0) {
    f = fopen(path, "r");
    name = path;
    if (f == NULL) {
      cli_error("cannot open '%s': %s", cli_quote(shown, path), cli_strerror(errno));
      return CLI_EXIT_USAGE;
    }
  }
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    cli_error("invalid --ndjson '%s': it is a folder: expected a file, or '-' "
              "for stdin",
              cli_quote(shown, name));
    if (f != stdin) fclose(f);
    return CLI_EXIT_USAGE;
  }
  int64_t size = S_ISREG(st.st_mode) ? st.st_size : 0;

  jobq *db;
  int rc = cli_open(&db);
  if (rc != 0) {
    if (f != stdin) fclose(f);
    return rc;
  }
  struct chunk *c = cli_xmalloc(sizeof *c);
  c->n = c->bytes = 0;
  struct totals t = {0, 0, 0, 0};
  struct cli_progress bar;
  cli_progress_start(&bar, "jobq put:", "jobs", size);
  /* A line holds one job: its payload escaped in JSON, and the rest. */
  struct ndjson_reader in;
  ndjson_reader_init(&in, f, cli_payload_limit() * 6 + 65536);
  const char *line;
  size_t len;

  rc = jobq_begin(db);
  if (rc != JOBQ_OK) rc = cli_lib_error(db, rc);
  while (rc == 0) {
    int r = ndjson_next(&in, &line, &len);
    if (r == 0) break;
    if (r < 0) {
      cli_error("cannot read '%s': %s", cli_quote(shown, name), cli_strerror(errno));
      rc = CLI_EXIT_ERROR;
    } else if (r == 2) {
      cli_error("line %ld: longer than %zu bytes: expected one job per line "
                "within the max payload",
                in.line, in.max);
      rc = CLI_EXIT_USAGE;
    } else {
      rc = parse_line(c, line, len, in.line, base);
      if (rc == 0 && (c->n == CHUNK_JOBS || c->bytes >= CHUNK_BYTES))
        rc = flush(db, c, &t);
    }
    cli_progress_update(&bar, in.bytes, t.put + t.existed + (int64_t)c->n);
  }
  if (rc == 0) rc = flush(db, c, &t);
  if (rc == 0 && (rc = jobq_commit(db)) != JOBQ_OK) rc = cli_lib_error(db, rc);
  cli_progress_end(&bar);
  if (rc != 0) {
    jobq_rollback(db);
  } else if (cli_global.json) {
    json_t *doc = cli_json_object();
    cli_json_set(doc, "put", json_integer(t.put));
    cli_json_set(doc, "existed", json_integer(t.existed));
    cli_json_set(doc, "first_id", t.put ? json_integer(t.first_id) : json_null());
    cli_json_set(doc, "last_id", t.put ? json_integer(t.last_id) : json_null());
    cli_json_print(doc);
  } else {
    printf("put %lld job%s", (long long)t.put, t.put == 1 ? "" : "s");
    if (t.existed > 0) printf(", %lld already existed", (long long)t.existed);
    putchar('\n');
  }
  chunk_clear(c);
  free(c);
  ndjson_reader_release(&in);
  jobq_close(db);
  if (f != stdin) fclose(f);
  return rc;
}

/* ---------------------------------------------------------------- command */

static int run(int argc, char **argv) {
  struct cli_job_args a;
  const char *ndjson = NULL;
  memset(&a, 0, sizeof a);
  const struct cli_option options[] = {
      CLI_JOB_WHAT_OPTIONS(&a),
      CLI_JOB_WHEN_OPTIONS(&a),
      CLI_JOB_HOW_OPTIONS(&a),
      CLI_STRING(0, "ndjson", &ndjson, "FILE",
                 "one job per line of FILE ('-': stdin), in one transaction"),
      CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  char shown[CLI_QUOTE_BUF];
  if (cli_check_args(argc, argv, 1, "one PAYLOAD (quote it when it has spaces)"))
    return CLI_EXIT_USAGE;
  if (ndjson != NULL && argc > 1) {
    cli_error("unexpected argument '%s': with --ndjson the payloads come from "
              "the lines",
              cli_quote(shown, argv[1]));
    return CLI_EXIT_USAGE;
  }
  jobq_put_opts o;
  if ((rc = cli_job_check(&a, &o)) != 0) return rc;
  if ((rc = cli_check_max_payload()) != 0) return rc;
  if (ndjson != NULL) return put_ndjson(ndjson, &o);
  return put_one(&o, argc > 1 ? argv[1] : NULL);
}

const struct cli_command cli_cmd_put = {
    "put", "enqueue a job, or many from NDJSON in one transaction", run};
