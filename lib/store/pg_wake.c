/*
 * pg_wake.c - the PostgreSQL store's wake-ups: NOTIFY sent with the
 * commit of a transaction that made work ready, and LISTEN on a
 * connection of its own, opened again with backoff when it is lost.
 */
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "store/pg.h"

/* ---------------------------------------------------------------- wake-ups */

/* The first wait before the LISTEN connection is opened again, doubled
 * after each failure up to LISTEN_RETRY_MAX_MS, with jitter. */
#define LISTEN_RETRY_MS 250
#define LISTEN_RETRY_MAX_MS 8000

/* Closes the LISTEN connection, its socket taken out of the watch set
 * first: at its end of file the set would stay readable for good. */
void pg_listener_drop(pg *c) {
  if (c->listener == NULL) return;
  if (c->watch_fd >= 0) epoll_ctl(c->watch_fd, EPOLL_CTL_DEL, PQsocket(c->listener), NULL);
  PQfinish(c->listener);
  c->listener = NULL;
}

/* Opens the LISTEN connection and puts its socket in the watch set. */
static int listen_now(jobq *db) {
  pg *c = pg_conn(db);
  PGconn *pc = pg_connect_to(db);
  if (pc == NULL) return db->err;
  PGresult *res = PQexec(pc, "LISTEN jobq");
  char line[400];
  int rc = JOBQ_OK;
  struct epoll_event ev = {.events = EPOLLIN};
  if (PQresultStatus(res) != PGRES_COMMAND_OK)
    rc = jobq__fail(db, JOBQ_ECONN, "cannot listen for wake-ups on '%s': %s", c->redacted,
                    pg_first_line(PQresultErrorMessage(res), line, sizeof line));
  else if (PQsetnonblocking(pc, 1) != 0 ||
           epoll_ctl(c->watch_fd, EPOLL_CTL_ADD, PQsocket(pc), &ev) != 0)
    rc = jobq__fail(db, JOBQ_ECONN, "cannot watch the wake-up connection to '%s'",
                    c->redacted);
  PQclear(res);
  if (rc != JOBQ_OK) {
    PQfinish(pc);
    return rc;
  }
  c->listener = pc;
  return JOBQ_OK;
}

/* The caller's descriptor is the watch set, not the LISTEN connection's
 * socket: it stays the same however often that connection is lost and
 * opened again (pg_changed).  A LISTEN that cannot be opened now is
 * tried again there. */
int pg_watch(jobq *db, int *fd) {
  pg *c = pg_conn(db);
  if (!c->notify)
    return jobq__fail(db, JOBQ_ENOTSUP,
                      "wake-ups are off for '%s' (notify=off): poll instead", c->redacted);
  /* LISTEN lasts as long as the server connection, which a pooler in
   * transaction mode hands to others after each transaction. */
  if (c->pooled)
    return jobq__fail(db, JOBQ_ENOTSUP,
                      "no wake-ups through a pooler in transaction mode "
                      "(pooler=transaction): poll instead");
  if (c->watch_fd < 0) {
    c->watch_fd = epoll_create1(EPOLL_CLOEXEC);
    if (c->watch_fd < 0)
      return jobq__fail(db, JOBQ_EDB, "cannot watch '%s': %s", c->redacted, strerror(errno));
    c->listen_failures = 0;
    c->listen_retry_ms = 0;
    jobq__error kept;
    jobq__error_keep(db, &kept);
    if (listen_now(db) != JOBQ_OK) {
      /* pg_changed says so, and tries again. */
      memcpy(c->listen_why, db->errmsg, sizeof c->listen_why);
      c->listen_failures = 1;
      c->listen_retry_ms = jobq__mono_ms() + LISTEN_RETRY_MS;
    }
    jobq__error_restore(db, &kept);
  }
  *fd = c->watch_fd;
  return JOBQ_OK;
}

/* While there is no LISTEN connection, every look tries to open one once
 * its wait is over, and says that wake-ups are not coming (the caller
 * claims and keeps polling); once there is one again, 1: what was sent
 * meanwhile went unheard. */
int pg_changed(jobq *db, int (*wanted)(const jobq *db, const char *queue)) {
  pg *c = pg_conn(db);
  if (c->watch_fd < 0) return 1;
  if (c->listener != NULL && !PQconsumeInput(c->listener)) {
    char line[400];
    snprintf(c->listen_why, sizeof c->listen_why, "lost the connection to '%s': %s",
             c->redacted, pg_first_line(PQerrorMessage(c->listener), line, sizeof line));
    pg_listener_drop(c);
    c->listen_failures = 0;
    c->listen_retry_ms = 0;
  }
  if (c->listener == NULL) {
    int64_t now = jobq__mono_ms();
    if (now >= c->listen_retry_ms) {
      if (listen_now(db) == JOBQ_OK) {
        c->listen_failures = 0;
        return 1;
      }
      memcpy(c->listen_why, db->errmsg, sizeof c->listen_why);
      c->listen_failures++;
      int n = c->listen_failures;
      /* Doubled after each failure, with jitter in [0.5, 1.5). */
      int64_t base = (int64_t)LISTEN_RETRY_MS << (n < 6 ? n - 1 : 5);
      int64_t wait = base / 2 + (int64_t)(jobq__rand(db) % (uint64_t)base);
      if (wait > LISTEN_RETRY_MAX_MS) wait = LISTEN_RETRY_MAX_MS;
      c->listen_retry_ms = now + wait;
    }
    return jobq__fail(db, JOBQ_ECONN,
                      "no wake-ups until the connection for them is back: %s; next attempt "
                      "in %lldms",
                      c->listen_why, (long long)(c->listen_retry_ms - now));
  }
  /* This handle's own commits are no news to it, nor work for queues it
   * does not watch (the payload is the queue's name). */
  int changed = 0, self = PQbackendPID(c->conn);
  PGnotify *note;
  while ((note = PQnotifies(c->listener)) != NULL) {
    changed |= note->be_pid != self &&
               (note->extra[0] == '\0' || wanted(db, note->extra));
    PQfreemem(note);
  }
  return changed;
}
