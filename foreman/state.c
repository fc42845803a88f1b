/*
 * state.c - the state file: what a machine's workers saw of each queue
 * database, so that a worker started fresh can tell a database that lost
 * writes acknowledged to the workers before it (jobq_expect()).
 *
 * One small JSON file per machine (or per --state), shared by every
 * foreman on it and read by `jobq doctor`.  For each database, by its
 * queue id: the epoch, the highest job id seen, and the receipts of the
 * last completions acknowledged to its workers (job, queue, claim token,
 * when it was claimed).  Foremen on the same machine write it in turn:
 * each write takes an exclusive lock on FILE.lock (flock), reads the
 * file, merges its own news in, and replaces the file whole (a new file,
 * flushed to disk, renamed over the old one, then the folder flushed), so
 * that a reader never sees half a file and a crash leaves the old one.
 * Readers take the lock shared.  The file holds no password (URLs are
 * redacted) but claim tokens: it is made readable by its owner only.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "foreman.h"

#define STATE_VERSION 1
#define STATE_DBS 32      /* databases kept, the most recently written */

int fm_state_default(char *buf, size_t size) {
  const char *xdg = getenv("XDG_STATE_HOME");
  const char *home = getenv("HOME");
  int n;
  if (xdg != NULL && xdg[0] == '/')
    n = snprintf(buf, size, "%s/jobq/state.json", xdg);
  else if (geteuid() == 0)
    n = snprintf(buf, size, "/var/lib/jobq/state.json");
  else if (home != NULL && home[0] == '/')
    n = snprintf(buf, size, "%s/.local/state/jobq/state.json", home);
  else
    return -1;
  return n > 0 && (size_t)n < size ? 0 : -1;
}

void fm_state_db_release(struct fm_state_db *s) {
  free(s->receipts);
  memset(s, 0, sizeof *s);
}

static void why_set(char *why, size_t size, const char *fmt, const char *path, int err) {
  snprintf(why, size, fmt, path, strerror(err));
}

/* Opens and locks path's lock file (exclusive or shared); its descriptor,
 * or -1 with why.  create: make the folder and the lock file if missing. */
static int lock_open(const char *path, int exclusive, int create, char *why, size_t size) {
  char lock[PATH_MAX];
  if ((size_t)snprintf(lock, sizeof lock, "%s.lock", path) >= sizeof lock) {
    snprintf(why, size, "state file '%s': the path is too long", path);
    return -1;
  }
  if (create) {
    /* Each missing folder of the path, as mkdir -p would. */
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p != '\0'; p++) {
      if (*p != '/') continue;
      *p = '\0';
      if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        why_set(why, size, "cannot make the state file's folder '%s': %s", dir, errno);
        return -1;
      }
      *p = '/';
    }
  }
  int fd = open(lock, (create ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (!create && errno == ENOENT) return -2;
    why_set(why, size, "cannot open the state file's lock '%s': %s", lock, errno);
    return -1;
  }
  while (flock(fd, exclusive ? LOCK_EX : LOCK_SH) != 0) {
    if (errno == EINTR) continue;
    why_set(why, size, "cannot lock the state file '%s': %s", path, errno);
    close(fd);
    return -1;
  }
  return fd;
}

/* The file's document, or a new empty one when there is none; NULL with
 * why when it cannot be read. */
static json_t *load(const char *path, char *why, size_t size) {
  json_error_t e;
  FILE *f = fopen(path, "re");
  if (f == NULL) {
    if (errno == ENOENT) return json_pack("{s:i, s:[]}", "version", STATE_VERSION, "databases");
    why_set(why, size, "cannot read the state file '%s': %s", path, errno);
    return NULL;
  }
  json_t *doc = json_loadf(f, 0, &e);
  fclose(f);
  if (doc == NULL || !json_is_array(json_object_get(doc, "databases"))) {
    snprintf(why, size, "the state file '%s' is not one jobq wrote (%s): move it aside",
             path, doc == NULL ? e.text : "no \"databases\"");
    json_decref(doc);
    return NULL;
  }
  return doc;
}

/* The entry of queue_id in doc's databases, or NULL. */
static json_t *entry(json_t *doc, const char *queue_id, size_t *index) {
  json_t *dbs = json_object_get(doc, "databases"), *e;
  size_t i;
  json_array_foreach(dbs, i, e) {
    const char *q = json_string_value(json_object_get(e, "queue_id"));
    if (q != NULL && strcmp(q, queue_id) == 0) {
      if (index != NULL) *index = i;
      return e;
    }
  }
  return NULL;
}

static int64_t int_of(json_t *o, const char *key) {
  return (int64_t)json_integer_value(json_object_get(o, key));
}

/* The receipts of an entry into s (the valid ones). */
static void receipts_of(json_t *e, struct fm_state_db *s) {
  json_t *list = json_object_get(e, "receipts"), *r;
  size_t i, n = json_array_size(list);
  s->receipts = n ? calloc(n, sizeof *s->receipts) : NULL;
  s->n = 0;
  if (n && s->receipts == NULL) return;
  json_array_foreach(list, i, r) {
    const char *q = json_string_value(json_object_get(r, "queue"));
    const char *c = json_string_value(json_object_get(r, "claim"));
    jobq_receipt *x = &s->receipts[s->n];
    x->id = int_of(r, "id");
    x->claimed_at_ms = int_of(r, "claimed_at");
    if (x->id <= 0 || c == NULL || strlen(c) != JOBQ_CLAIM_LEN) continue;
    snprintf(x->queue, sizeof x->queue, "%s", q != NULL ? q : "");
    memcpy(x->claim, c, sizeof x->claim);
    s->n++;
  }
}

int fm_state_read(const char *path, const char *queue_id, struct fm_state_db *out, char *why,
                  size_t size) {
  memset(out, 0, sizeof *out);
  /* Without its lock file, no foreman wrote it here: read it as it is. */
  int fd = lock_open(path, 0, 0, why, size);
  if (fd == -1) return -1;
  json_t *doc = load(path, why, size);
  if (fd >= 0) close(fd);
  if (doc == NULL) return -1;
  json_t *e = entry(doc, queue_id, NULL);
  if (e != NULL) {
    snprintf(out->queue_id, sizeof out->queue_id, "%s", queue_id);
    out->epoch = int_of(e, "epoch");
    out->seq = int_of(e, "seq");
    receipts_of(e, out);
  }
  json_decref(doc);
  return e != NULL;
}

static json_t *receipt_json(const jobq_receipt *r) {
  return json_pack("{s:I, s:s, s:s, s:I}", "id", (json_int_t)r->id, "queue", r->queue, "claim",
                   r->claim, "claimed_at", (json_int_t)r->claimed_at_ms);
}

/* The newer of two receipts (by when it was claimed, then by id) first. */
static int newer_first(const void *a, const void *b) {
  const jobq_receipt *x = a, *y = b;
  if (x->claimed_at_ms != y->claimed_at_ms) return x->claimed_at_ms > y->claimed_at_ms ? -1 : 1;
  return (x->id < y->id) - (x->id > y->id);
}

/* seen merged with what the file says of the same database (old, its
 * entry): the file's receipts of the same epoch, each job once, the
 * newest FM_STATE_RECEIPTS. */
static json_t *merged(const struct fm_state_db *seen, json_t *old, const char *url) {
  struct fm_state_db was;
  memset(&was, 0, sizeof was);
  int64_t seq = seen->seq;
  if (old != NULL && int_of(old, "epoch") == seen->epoch) {
    receipts_of(old, &was);
    if (int_of(old, "seq") > seq) seq = int_of(old, "seq");
  }
  size_t n = seen->n + was.n, k = 0;
  jobq_receipt *all = n ? malloc(n * sizeof *all) : NULL;
  if (n && all == NULL) {
    fm_state_db_release(&was);
    return NULL;
  }
  for (size_t i = 0; i < seen->n + was.n; i++) {
    const jobq_receipt *r = i < seen->n ? &seen->receipts[i] : &was.receipts[i - seen->n];
    size_t j = 0;
    while (j < k && all[j].id != r->id) j++;
    if (j == k) all[k++] = *r;
  }
  if (k > 1) qsort(all, k, sizeof *all, newer_first);
  if (k > FM_STATE_RECEIPTS) k = FM_STATE_RECEIPTS;
  json_t *list = json_array();
  for (size_t i = 0; list != NULL && i < k; i++) json_array_append_new(list, receipt_json(&all[i]));
  free(all);
  fm_state_db_release(&was);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return json_pack("{s:s, s:s, s:I, s:I, s:I, s:o}", "queue_id", seen->queue_id, "url", url,
                   "epoch", (json_int_t)seen->epoch, "seq", (json_int_t)seq, "written",
                   (json_int_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, "receipts",
                   list != NULL ? list : json_array());
}

/* Writes doc to path whole: a new file beside it (FILE.new, which only
 * the holder of the lock writes; one that a crash left is removed), made
 * anew so that no one else's file is written to, flushed, renamed over
 * it, and the folder flushed.  open(), not mkostemp(): ThreadSanitizer
 * does not see the descriptor that mkostemp() makes, and took its close
 * for a race with the other threads' descriptors of the same number. */
static int replace(const char *path, json_t *doc, char *why, size_t size) {
  char tmp[PATH_MAX];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.new", path) >= sizeof tmp) {
    snprintf(why, size, "state file '%s': the path is too long", path);
    return -1;
  }
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW;
  int fd = open(tmp, flags, 0600);
  if (fd < 0 && errno == EEXIST && unlink(tmp) == 0) fd = open(tmp, flags, 0600);
  if (fd < 0) {
    why_set(why, size, "cannot write the state file '%s': %s", path, errno);
    return -1;
  }
  char *text = json_dumps(doc, JSON_INDENT(1));
  size_t len = text != NULL ? strlen(text) : 0, off = 0;
  int err = text == NULL ? ENOMEM : 0;
  while (err == 0 && off < len) {
    ssize_t w = write(fd, text + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) err = errno;
    else off += (size_t)w;
  }
  if (err == 0 && (write(fd, "\n", 1) != 1 || fsync(fd) != 0)) err = errno;
  if (close(fd) != 0 && err == 0) err = errno;
  free(text);
  if (err == 0 && rename(tmp, path) != 0) err = errno;
  if (err != 0) {
    unlink(tmp);
    why_set(why, size, "cannot write the state file '%s': %s", path, err);
    return -1;
  }
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash != NULL) {
    *(slash == dir ? slash + 1 : slash) = '\0';
    int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d >= 0) {
      fsync(d);
      close(d);
    }
  }
  return 0;
}

int fm_state_write(const char *path, const struct fm_state_db *seen, const char *url, char *why,
                   size_t size) {
  int fd = lock_open(path, 1, 1, why, size);
  if (fd < 0) return -1;
  json_t *doc = load(path, why, size);
  int rc = -1;
  if (doc != NULL) {
    json_t *dbs = json_object_get(doc, "databases");
    size_t at = 0;
    json_t *old = entry(doc, seen->queue_id, &at);
    if (old != NULL && int_of(old, "epoch") > seen->epoch) {
      /* Another worker saw a newer epoch: ours is the past. */
      rc = 0;
    } else {
      json_t *e = merged(seen, old, url != NULL ? url : "");
      if (e != NULL) {
        if (old != NULL) json_array_remove(dbs, at);
        json_array_append_new(dbs, e);
        /* The least recently written go first. */
        while (json_array_size(dbs) > STATE_DBS) json_array_remove(dbs, 0);
        json_object_set_new(doc, "version", json_integer(STATE_VERSION));
        rc = replace(path, doc, why, size);
      } else {
        snprintf(why, size, "out of memory");
      }
    }
    json_decref(doc);
  }
  close(fd);
  return rc;
}
