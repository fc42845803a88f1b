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
    "delay, run_at, key, barrier, unique, max_attempts, timeout, backoff,\n"
    "after (an array of ids), after_index (an array of places of earlier\n"
    "lines' jobs, from 0: a graph of jobs in one input) and\n"
    "after_any_outcome; the options below are the defaults of every line.\n"
    "All the jobs are written in one transaction, or none when a line is\n"
    "wrong.\n"
    "\n"
    "With --after, the job is pending until every job named is done; when\n"
    "one dies or is cancelled, it is cancelled too, naming that job, unless\n"
    "--after-any-outcome lets it run once they have all finished.\n";

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
  int64_t *ids; /* the ids of the jobs of the chunks written, in order */
  size_t n, cap;
};

static void chunk_clear(struct chunk *c) {
  for (size_t i = 0; i < c->n; i++) ndjson_job_release(&c->job[i]);
  c->n = 0;
  c->bytes = 0;
}

/* The places of earlier jobs of the input that job j names (after_index):
 * those of chunks written become ids, those of this chunk places in it;
 * 0, or the usage status after a message. */
static int place_parents(struct ndjson_job *j, const struct totals *t, size_t in_chunk,
                         long line) {
  jobq_put_opts *o = &j->opts;
  size_t here = t->n + in_chunk, kept = 0;
  int64_t *after = cli_xmalloc((o->n_after + o->n_after_index + 1) * sizeof *after);
  if (o->n_after > 0) memcpy(after, o->after, o->n_after * sizeof *after);
  size_t na = o->n_after;
  for (size_t i = 0; i < o->n_after_index; i++) {
    size_t at = o->after_index[i];
    if (at >= here) {
      free(after);
      if (here == 0)
        cli_error("line %ld: invalid after_index '%zu': expected the place of an earlier "
                  "line's job, and this is the first",
                  line, at);
      else
        cli_error("line %ld: invalid after_index '%zu': expected the place of an earlier "
                  "line's job (0 to %zu)",
                  line, at, here - 1);
      return CLI_EXIT_USAGE;
    }
    if (at < t->n)
      after[na++] = t->ids[at];
    else
      j->after_index[kept++] = at - t->n;
  }
  free(j->after);
  j->after = after;
  o->after = after;
  o->n_after = na;
  o->n_after_index = kept;
  return 0;
}

/* Adds one line's job to the chunk; 0, or the usage status after a
 * message "line N: ...". */
static int parse_line(struct chunk *c, const struct totals *t, const char *text,
                      size_t len, long line, const jobq_put_opts *base) {
  char err[512];
  size_t k = c->n;
  int rc = ndjson_parse(text, len, base, &c->job[k], err, sizeof err);
  if (rc != 0) {
    ndjson_job_release(&c->job[k]);
    cli_error("line %ld: %s", line, err);
    return CLI_EXIT_USAGE;
  }
  if (c->job[k].opts.n_after_index > 0 &&
      (rc = place_parents(&c->job[k], t, k, line)) != 0) {
    ndjson_job_release(&c->job[k]);
    return rc;
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
  if (t->n + c->n > t->cap) {
    t->cap = 2 * (t->n + c->n);
    int64_t *ids = realloc(t->ids, t->cap * sizeof *ids);
    if (ids == NULL) cli_oom();
    t->ids = ids;
  }
  memcpy(t->ids + t->n, c->ids, c->n * sizeof *c->ids);
  t->n += c->n;
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
  struct totals t = {0, 0, 0, 0, NULL, 0, 0};
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
      rc = parse_line(c, &t, line, len, in.line, base);
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
  free(t.ids);
  ndjson_reader_release(&in);
  jobq_close(db);
  if (f != stdin) fclose(f);
  return rc;
}

/* ---------------------------------------------------------------- command */

/* --after's list: ids separated by commas; 0, or 2 after a message. */
static int parse_after(const char *text, int64_t **out, size_t *n) {
  char shown[CLI_QUOTE_BUF];
  size_t cap = 1;
  for (const char *p = text; *p; p++) cap += *p == ',';
  int64_t *ids = cli_xmalloc(cap * sizeof *ids);
  size_t k = 0;
  const char *p = text;
  for (;;) {
    char *end;
    errno = 0;
    long long v = *p >= '0' && *p <= '9' ? strtoll(p, &end, 10) : 0;
    if (v <= 0 || errno != 0 || (*end != ',' && *end != '\0')) {
      cli_error("invalid --after '%s': expected job ids separated by commas, like 12,15",
                cli_quote(shown, text));
      free(ids);
      return CLI_EXIT_USAGE;
    }
    ids[k++] = v;
    if (*end == '\0') break;
    p = end + 1;
  }
  if (k > JOBQ_AFTER_MAX) {
    cli_error("invalid --after '%s': %zu jobs: expected at most %d",
              cli_quote(shown, text), k, JOBQ_AFTER_MAX);
    free(ids);
    return CLI_EXIT_USAGE;
  }
  *out = ids;
  *n = k;
  return 0;
}

static int run(int argc, char **argv) {
  struct cli_job_args a;
  const char *ndjson = NULL, *after = NULL;
  int any_outcome = 0;
  memset(&a, 0, sizeof a);
  const struct cli_option options[] = {
      CLI_JOB_WHAT_OPTIONS(&a),
      CLI_JOB_WHEN_OPTIONS(&a),
      CLI_JOB_HOW_OPTIONS(&a),
      CLI_STRING(0, "after", &after, "ID,...",
                 "pending until every job named is done; cancelled if one dies or is "
                 "cancelled"),
      CLI_FLAG(0, "after-any-outcome", &any_outcome,
               "with --after: run once they have all finished, whatever their outcome"),
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
  int64_t *ids = NULL;
  if (after != NULL && (rc = parse_after(after, &ids, &o.n_after)) != 0) return rc;
  if (any_outcome && after == NULL && ndjson == NULL) {
    cli_error("--after-any-outcome needs --after: expected the jobs to wait for");
    return CLI_EXIT_USAGE;
  }
  o.after = ids;
  o.after_any_outcome = any_outcome;
  rc = ndjson != NULL ? put_ndjson(ndjson, &o) : put_one(&o, argc > 1 ? argv[1] : NULL);
  free(ids);
  return rc;
}

const struct cli_command cli_cmd_put = {
    "put", "enqueue a job, or many from NDJSON in one transaction", run};
