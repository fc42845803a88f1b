/*
 * util.c - the pieces every jobq command shares besides options and
 * output: the global settings, one-line messages on stderr, exit statuses
 * and how library errors map to them, finding the database URL (--db,
 * --db-file, $JOBQ_DB, a systemd credential) and opening it, reading
 * outside input within a bound, and allocation that stops the program
 * when memory runs out (like git's xmalloc).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"
#include "output.h"
#include "util.h"

struct cli_global cli_global;

static const char *command;
static int64_t max_payload;  /* --max-payload once checked; 0: not given */

void cli_set_command(const char *name) { command = name; }
const char *cli_command_name(void) { return command; }

void cli_error(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fflush(stdout);
  cli_progress_erase();
  if (command != NULL)
    fprintf(stderr, "jobq %s: %s\n", command, msg);
  else
    fprintf(stderr, "jobq: %s\n", msg);
}

const char *cli_strerror(int err) {
  static char buf[128];
  snprintf(buf, sizeof buf, "%s", strerror(err));
  buf[0] = (char)tolower((unsigned char)buf[0]);
  return buf;
}

int cli_exit_code(int err) {
  switch (err) {
    case JOBQ_OK:
      return CLI_EXIT_OK;
    case JOBQ_EINVAL:
    case JOBQ_EURL:
    case JOBQ_ESCHEMA:
    case JOBQ_ETOOBIG:
      return CLI_EXIT_USAGE;
    default:
      return jobq_err_temporary(err) ? CLI_EXIT_TEMP : CLI_EXIT_ERROR;
  }
}

static int severity(int status) {
  switch (status) {
    case CLI_EXIT_OK: return 0;
    case CLI_EXIT_TEMP: return 1;
    case CLI_EXIT_ERROR: return 2;
    default: return 3;
  }
}

int cli_worst(int a, int b) { return severity(b) > severity(a) ? b : a; }

int cli_lib_error(jobq *db, int rc) {
  const char *msg = jobq_errmsg(db);
  /* Messages may quote input: keep them on one line. */
  char *line = cli_escape(msg, strlen(msg));
  cli_error("%s", line[0] != '\0' ? line : jobq_strerror(rc));
  free(line);
  return cli_exit_code(rc);
}

#define URL_FILE_MAX (64 * 1024)

/* The URL on the first line of the file path (what names it), without
 * its line end and trailing blanks; stops the program when there is
 * none. */
static char *url_from_file(const char *what, const char *path) {
  char shown[CLI_QUOTE_BUF];
  FILE *f = fopen(path, "re");
  char *data = NULL;
  size_t len = 0;
  int rc = f != NULL ? cli_read_all(f, URL_FILE_MAX, &data, &len) : -1;
  int e = errno;
  if (f != NULL) fclose(f);
  if (rc < 0) {
    cli_error("cannot read %s '%s': %s", what, cli_quote(shown, path), cli_strerror(e));
    exit(CLI_EXIT_USAGE);
  }
  size_t end = rc == 0 ? strcspn(data, "\r\n") : 0;
  while (end > 0 && isspace((unsigned char)data[end - 1])) end--;
  if (end == 0 || memchr(data, '\0', end) != NULL) {
    cli_error("invalid %s '%s': expected a database URL on its first line", what,
              cli_quote(shown, path));
    exit(CLI_EXIT_USAGE);
  }
  data[end] = '\0';
  return data;
}

/* $CREDENTIALS_DIRECTORY/jobq-db when systemd passed that credential. */
static char *credential_path(void) {
  const char *dir = getenv("CREDENTIALS_DIRECTORY");
  if (dir == NULL || dir[0] == '\0') return NULL;
  size_t size = strlen(dir) + sizeof "/jobq-db";
  char *path = cli_xmalloc(size);
  snprintf(path, size, "%s/jobq-db", dir);
  if (access(path, F_OK) == 0) return path;
  free(path);
  return NULL;
}

const char *cli_db_url(void) {
  static char *from_file;
  if (cli_global.db != NULL && cli_global.db_file != NULL) {
    cli_error("--db and --db-file both name the database: expected one of them");
    exit(CLI_EXIT_USAGE);
  }
  if (cli_global.db != NULL) return cli_global.db;
  if (from_file != NULL) return from_file;
  if (cli_global.db_file != NULL)
    return from_file = url_from_file("--db-file", cli_global.db_file);
  const char *env = getenv("JOBQ_DB");
  if (env != NULL && env[0] != '\0') return env;
  env = getenv("JOBQ_DB_FILE");
  if (env != NULL && env[0] != '\0')
    return from_file = url_from_file("$JOBQ_DB_FILE", env);
  char *cred = credential_path();
  if (cred != NULL) {
    from_file = url_from_file("the systemd credential", cred);
    free(cred);
    return from_file;
  }
  return "sqlite:jobq.db";
}

int cli_db_named(void) {
  const char *env = getenv("JOBQ_DB"), *file = getenv("JOBQ_DB_FILE");
  if (cli_global.db != NULL || cli_global.db_file != NULL ||
      (env != NULL && env[0] != '\0') || (file != NULL && file[0] != '\0'))
    return 1;
  char *cred = credential_path();
  int named = cred != NULL;
  free(cred);
  return named;
}

void cli_hide_db_password(void) {
  char *arg = (char *)cli_global.db;
  if (arg == NULL) return;
  char *red = jobq_url_redact(arg);
  if (red == NULL) cli_oom();
  if (strcmp(red, arg) != 0) {
    /* The URL lives on in a copy; the argument, in this process's memory
     * where /proc/PID/cmdline reads it, becomes the redacted URL, cut to
     * the argument's length and padded with NULs. */
    cli_global.db = cli_xstrdup(arg);
    size_t len = strlen(arg), rlen = strlen(red);
    memcpy(arg, red, rlen < len ? rlen : len);
    if (rlen < len) memset(arg + rlen, 0, len - rlen);
  }
  free(red);
}

int cli_check_max_payload(void) {
  if (cli_global.max_payload == NULL || max_payload > 0) return 0;
  return cli_parse_size("--max-payload", cli_global.max_payload, 1,
                        (int64_t)1 << 30, &max_payload);
}

size_t cli_payload_limit(void) {
  if (max_payload > 0) return (size_t)max_payload;
  /* The URL's ?max_payload=SIZE, which jobq_open() applies. */
  const char *url = cli_db_url();
  const char *q = strchr(url, '?');
  while (q != NULL) {
    q++;
    size_t len = strcspn(q, "&#");
    if (strncmp(q, "max_payload=", 12) == 0 && len > 12 && len - 12 < 32) {
      char text[32];
      int64_t v;
      snprintf(text, sizeof text, "%.*s", (int)(len - 12), q + 12);
      if (jobq_parse_size(text, &v) == JOBQ_OK && v > 0 && v <= (int64_t)1 << 30)
        return (size_t)v;
    }
    q = q[len] == '&' ? q + len : NULL;
  }
  return JOBQ_DEFAULT_MAX_PAYLOAD;
}

static int open_db(int readonly, jobq **out) {
  *out = NULL;
  int rc = cli_check_max_payload();
  if (rc != 0) return rc;
  jobq *db;
  rc = readonly ? jobq_open_readonly(cli_db_url(), &db) : jobq_open(cli_db_url(), &db);
  if (db == NULL) {
    cli_error("out of memory");
    return CLI_EXIT_ERROR;
  }
  if (rc == JOBQ_OK && max_payload > 0)
    rc = jobq_set_max_payload(db, (size_t)max_payload);
  if (rc != JOBQ_OK) {
    int status = cli_lib_error(db, rc);
    jobq_close(db);
    return status;
  }
  *out = db;
  return 0;
}

int cli_open(jobq **out) { return open_db(0, out); }

int cli_open_readonly(jobq **out) { return open_db(1, out); }

int cli_db_now(jobq *db, int64_t *now_ms) {
  jobq_identity id;
  int rc = jobq_identity_get(db, &id);
  if (rc != JOBQ_OK) return cli_lib_error(db, rc);
  *now_ms = id.now_ms;
  return 0;
}

int cli_read_all(FILE *f, size_t max, char **data, size_t *len) {
  size_t cap = 0, n = 0;
  char *buf = NULL;
  *data = NULL;
  *len = 0;
  for (;;) {
    if (n == cap) {
      if (cap > max) break;
      cap = cap == 0 ? 4096 : cap * 2;
      if (cap > max + 1) cap = max + 1;
      buf = cli_xrealloc(buf, cap + 1);
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    int e = errno;
    free(buf);
    errno = e;
    return -1;
  }
  if (n > max) {
    free(buf);
    return 1;
  }
  if (buf == NULL) buf = cli_xmalloc(1);
  buf[n] = '\0';
  *data = buf;
  *len = n;
  return 0;
}

const char *cli_quote(char *buf, const char *s) {
  size_t n = strlen(s), o = 0, cut = n;
  if (n > 64) {
    cut = 64;
    /* Not in the middle of a UTF-8 sequence. */
    while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80) cut--;
  }
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < cut;) {
    size_t len = cli_utf8_seq(p + i, cut - i);
    if (len == 0 || p[i] < 0x20 || p[i] == 0x7F) {
      /* Control characters and bytes that are no UTF-8 text. */
      o += (size_t)snprintf(buf + o, CLI_QUOTE_BUF - o, "\\x%02x", p[i]);
      i++;
    } else {
      memcpy(buf + o, p + i, len);
      o += len;
      i += len;
    }
  }
  if (cut < n) {
    memcpy(buf + o, "...", 3);
    o += 3;
  }
  buf[o] = '\0';
  return buf;
}

void cli_oom(void) {
  fflush(stdout);
  fprintf(stderr, "jobq: out of memory\n");
  exit(CLI_EXIT_ERROR);
}

void *cli_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (p == NULL) cli_oom();
  return p;
}

void *cli_xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (q == NULL) cli_oom();
  return q;
}

char *cli_xstrdup(const char *s) {
  char *c = strdup(s);
  if (c == NULL) cli_oom();
  return c;
}

int cli_each_job(int nids, char **ids, cli_job_action act) {
  int64_t *id = cli_xmalloc((size_t)nids * sizeof *id);
  for (int i = 0; i < nids; i++) {
    if (cli_parse_id(ids[i], &id[i]) != 0) {
      free(id);
      return CLI_EXIT_USAGE;
    }
  }
  jobq *db;
  int status = cli_open(&db);
  if (status != 0) {
    free(id);
    return status;
  }
  json_t *list = cli_global.json ? json_array() : NULL;
  if (cli_global.json && list == NULL) cli_oom();
  for (int i = 0; i < nids; i++) {
    const char *word = NULL, *text = NULL;
    int rc = act(db, id[i], &word, &text);
    json_t *o = list != NULL ? json_object() : NULL;
    if (list != NULL && (o == NULL || json_array_append_new(list, o) != 0))
      cli_oom();
    if (o != NULL) cli_json_set(o, "id", json_integer(id[i]));
    if (rc == JOBQ_OK) {
      if (o != NULL)
        cli_json_set(o, "status", json_string(word));
      else
        printf("job %lld %s\n", (long long)id[i], text);
      continue;
    }
    if (o != NULL) {
      cli_json_set(o, "status", json_string("error"));
      cli_json_set(o, "error", cli_json_str(jobq_errmsg(db)));
    }
    status = cli_worst(status, cli_lib_error(db, rc));
  }
  if (list != NULL) {
    json_t *doc = cli_json_object();
    cli_json_set(doc, "jobs", list);
    cli_json_print(doc);
  }
  jobq_close(db);
  free(id);
  return status;
}
