/*
 * hello.c - the C example of the README, whole: a producer and a worker in
 * one program, on the embedded SQLite store.
 *
 * It puts three jobs on the queue "email", then works them as a worker
 * would: open a session, claim a batch, and for each job write the
 * application's own row (a table "sent" in the same database) and complete
 * the job in one transaction, through jobq_begin(), jobq_native() and
 * jobq_commit().  If the claim was lost meanwhile (the worker was too slow
 * and another took the job over), jobq_complete() returns JOBQ_ELOST and
 * the rollback takes the application's row back with it: the row is
 * written exactly once, by the attempt whose completion counted.
 *
 * usage: hello [URL]        (default sqlite:hello.db)
 */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "jobq.h"

/* The application's own write, in the caller's open transaction. */
static int record_sent(sqlite3 *conn, const jobq_job *job) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(conn, "INSERT INTO sent(job, address) VALUES (?, ?)",
                         -1, &st, NULL) != SQLITE_OK)
    return -1;
  sqlite3_bind_int64(st, 1, job->id);
  sqlite3_bind_text(st, 2, job->payload, (int)job->payload_len, SQLITE_TRANSIENT);
  int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
  sqlite3_finalize(st);
  return rc;
}

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : "sqlite:hello.db";
  jobq *db;
  if (jobq_open(url, &db) != JOBQ_OK) {
    fprintf(stderr, "hello: %s\n", jobq_errmsg(db));
    jobq_close(db);
    return 1;
  }

  /* Produce: three jobs on the queue "email". */
  const char *to[] = {"ada@example.com", "grace@example.com", "alan@example.com"};
  for (int i = 0; i < 3; i++) {
    jobq_put_opts o;
    jobq_put_opts_init(&o);
    o.queue = "email";
    o.payload = to[i];
    o.payload_len = strlen(to[i]);
    int64_t id;
    if (jobq_put(db, &o, &id, NULL) != JOBQ_OK) {
      fprintf(stderr, "hello: put: %s\n", jobq_errmsg(db));
      jobq_close(db);
      return 1;
    }
    printf("put job %" PRId64 " for %s\n", id, to[i]);
  }

  /* The application's own table, in the same SQLite file. */
  sqlite3 *conn = jobq_native(db);
  sqlite3_exec(conn, "CREATE TABLE IF NOT EXISTS sent(job INTEGER PRIMARY KEY, address TEXT)",
               NULL, NULL, NULL);

  /* Work: one session; claim up to 10 jobs at a time until none is left. */
  jobq_session *s;
  if (jobq_session_open(db, NULL, &s) != JOBQ_OK) {
    fprintf(stderr, "hello: session: %s\n", jobq_errmsg(db));
    jobq_close(db);
    return 1;
  }
  const char *queues[] = {"email"};
  int status = 0;
  for (;;) {
    jobq_job *jobs;
    size_t n;
    if (jobq_claim(s, queues, 1, 10, &jobs, &n) != JOBQ_OK) {
      fprintf(stderr, "hello: claim: %s\n", jobq_errmsg(db));
      status = 1;
      break;
    }
    if (n == 0) {
      jobq_jobs_free(jobs, n);
      break;
    }
    for (size_t i = 0; i < n; i++) {
      /* ... send the email to jobs[i].payload here ... */
      int rc = jobq_begin(db);
      if (rc == JOBQ_OK)
        rc = record_sent(conn, &jobs[i]) == 0 ? JOBQ_OK : JOBQ_EDB;
      if (rc == JOBQ_OK)
        rc = jobq_complete(s, &jobs[i], "sent", 4, NULL);
      if (rc == JOBQ_OK)
        rc = jobq_commit(db);
      else
        jobq_rollback(db); /* JOBQ_ELOST: our row goes too */
      printf("job %" PRId64 " (%s): %s\n", jobs[i].id, (char *)jobs[i].payload,
             rc == JOBQ_OK ? "sent" : jobq_strerror(rc));
      if (rc != JOBQ_OK && rc != JOBQ_ELOST)
        status = 1;
    }
    jobq_jobs_free(jobs, n);
  }
  jobq_session_close(s);
  jobq_close(db);
  return status;
}
