/*
 * failpoint.c - deterministic faults at named places in the library, so
 * that a race a chaos run found once can be replayed as an ordinary test.
 *
 * JOBQ_FAILPOINT holds "NAME=ACTION[,NAME=ACTION...]"; each place the
 * library passes calls jobq__failpoint(db, NAME), which does nothing unless
 * that name is listed.  Actions:
 *
 *   sleep:MS   wait MS milliseconds, then go on (widens a race window)
 *   error      fail with JOBQ_ECONN, as if the connection broke there
 *   kill       SIGKILL this process, as a crash would (for tests that run
 *              the library in a child process)
 *
 * The places:
 *
 *   claim.before-commit   a claim's session checked and acknowledgements
 *                         done, the claim itself not yet sent (a store may
 *                         send the commit with it)
 *   claim.sent-commit     (PostgreSQL) a claim sent with its commit, which
 *                         went through, its reply not yet read (with
 *                         error: the reply was lost, no job is known; the
 *                         session's next transaction gives the claim's
 *                         jobs back)
 *   claim.after-commit    a claim committed, the jobs not yet returned
 *                         (with error: the reply of the commit was lost;
 *                         the claim reads its first job back and returns
 *                         the jobs)
 *   claim.read-back       that read-back about to run (with error: it
 *                         cannot tell, and the session's next transaction
 *                         gives the claim's jobs back)
 *   ack.before-fence      acknowledgements about to read their jobs
 *   ack.before-commit     acknowledgements done, the commit not yet sent
 *   ack.after-commit      acknowledgements committed, the caller not told
 *                         (with error: the outcome of the commit is
 *                         unknown to the caller, who must retry)
 *   heartbeat.before      a heartbeat about to run
 *   put.keys-missing      (MariaDB/MySQL) a put of keyed jobs found its keys'
 *                         lock rows missing, not yet inserted
 *   put.before-insert     a put of a batch took its queues' locks (and,
 *                         on MariaDB/MySQL and SQLite, read their barriers,
 *                         keys and parts), its INSERT not yet run (with
 *                         sleep: the queue's parts may be changed meanwhile)
 *   put.uniques-found     a put of a batch with unique keys read which of
 *                         them are held, its INSERT not yet run (with
 *                         sleep: another put may take one meanwhile)
 *   schema.read           (SQLite) an open read what the file holds, its
 *                         schema's version not yet (with sleep: another
 *                         process may make jobq's tables meanwhile)
 *   prune.counted         a prune counted the jobs it removes and took
 *                         them off the counters, the jobs not yet deleted
 *
 * Unset (the normal case) it costs a getenv() per place.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

int jobq__failpoint(jobq *db, const char *name) {
  const char *spec = getenv("JOBQ_FAILPOINT");
  if (spec == NULL || *spec == '\0') return JOBQ_OK;
  size_t nlen = strlen(name);
  for (const char *p = spec; *p != '\0';) {
    size_t len = strcspn(p, ",");
    if (len > nlen && strncmp(p, name, nlen) == 0 && p[nlen] == '=') {
      const char *action = p + nlen + 1;
      size_t alen = len - nlen - 1;
      if (alen > 6 && strncmp(action, "sleep:", 6) == 0) {
        long ms = strtol(action + 6, NULL, 10);
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        while (ms > 0 && nanosleep(&ts, &ts) != 0) {
        }
        return JOBQ_OK;
      }
      if (alen == 5 && strncmp(action, "error", 5) == 0)
        return jobq__fail(db, JOBQ_ECONN, "failpoint '%s': the connection broke here",
                          name);
      if (alen == 4 && strncmp(action, "kill", 4) == 0) raise(SIGKILL);
      return JOBQ_OK;
    }
    p += len;
    if (*p == ',') p++;
  }
  return JOBQ_OK;
}
