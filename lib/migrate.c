/*
 * migrate.c - the schema: its version read and checked when a handle
 * opens, refused when newer than this jobq, and brought up to date by
 * jobq_init() (or, on an embedded database, by the first open that may
 * write), one version at a time, each step run unless it was made
 * already.  The steps are the store's (its dialect's types and words,
 * store.h's schema); their order, the version bookkeeping in jobq_meta
 * and the rules are the library's.
 */
#include "internal.h"

/* The schema's version in the database (0: jobq never made it), and
 * whether jobq_meta is there at all. */
static int schema_version(jobq *db, int *has, int64_t *version) {
  int64_t n = 0;
  *version = 0;
  int rc = jobq__sql_int(db, JOBQ_Q_SCHEMA_HAS_META, 0, &n, SQL_ARGS());
  *has = n != 0;
  if (rc == JOBQ_OK && *has) rc = jobq__sql_int(db, JOBQ_Q_SCHEMA_VERSION, 0, version, SQL_ARGS());
  return rc;
}

static int too_new(jobq *db, int64_t version) {
  return jobq__fail(db, JOBQ_ESCHEMA,
                    "the jobq schema in '%s' is version %lld, newer than this jobq "
                    "understands (%d): expected a newer jobq",
                    db->url_redacted, (long long)version, JOBQ_SCHEMA_VERSION);
}

/* The steps of steps[] (ended by one without sql), each unless it was
 * made already. */
static int run_steps(jobq *db, const jobq_step *steps) {
  int rc = JOBQ_OK;
  for (const jobq_step *s = steps; s->sql != NULL && rc == JOBQ_OK; s++) {
    int64_t made = 0;
    if (s->unless != NULL && (rc = db->store->schema_run(db, s->unless, &made)) != JOBQ_OK) break;
    if (!made) rc = db->store->schema_run(db, s->sql, NULL);
  }
  return rc;
}

int jobq__migrate(jobq *db) {
  if (db->txn_depth > 0)
    return jobq__fail(db, JOBQ_ESTATE,
                      "jobq_init inside a transaction: expected it outside "
                      "jobq_begin/jobq_commit (creating tables commits)");
  int rc = db->store->schema_begin(db);
  if (rc != JOBQ_OK) return rc;
  /* Another initialiser may have been first: read under the lock. */
  int has;
  int64_t version;
  rc = schema_version(db, &has, &version);
  if (rc == JOBQ_OK && version > JOBQ_SCHEMA_VERSION) rc = too_new(db, version);
  if (rc == JOBQ_OK && !has) rc = run_steps(db, db->store->schema[0]);
  if (rc == JOBQ_OK && version == 0) {
    char uuid[37];
    jobq__uuid(uuid);
    rc = jobq__sql_run(db, JOBQ_Q_META_INSERT, SQL_ARGS(V_TEXT(uuid)));
  }
  for (int64_t v = version + 1; rc == JOBQ_OK && v <= JOBQ_SCHEMA_VERSION; v++) {
    rc = run_steps(db, db->store->schema[v]);
    if (rc == JOBQ_OK) rc = jobq__sql_run(db, JOBQ_Q_META_VERSION_SET, SQL_ARGS(V_INT(v)));
  }
  jobq__error kept;
  jobq__error_keep(db, &kept);
  int end = db->store->schema_end(db, rc == JOBQ_OK);
  if (rc != JOBQ_OK) {
    jobq__error_restore(db, &kept);
    return rc;
  }
  if (end != JOBQ_OK) return end;
  db->schema_missing = 0;
  return jobq__ok(db);
}

int jobq__schema_check(jobq *db) {
  /* An embedded database gets its schema at the first open that may
   * write, but for a file of another application, left as it is until
   * jobq_init() is asked to add jobq's tables to it.  What the file holds
   * is read before the version: another process's first open may commit
   * jobq's tables in between, and its tables read after a version read
   * before would pass for another application's. */
  int64_t objects = 0;
  int rc = db->store->init_on_open
               ? jobq__sql_int(db, JOBQ_Q_SCHEMA_OBJECTS, 0, &objects, SQL_ARGS())
               : JOBQ_OK;
  if (rc == JOBQ_OK) rc = jobq__failpoint(db, "schema.read");
  if (rc != JOBQ_OK) return rc;
  int has;
  int64_t version;
  rc = schema_version(db, &has, &version);
  if (rc != JOBQ_OK) return rc;
  if (version > JOBQ_SCHEMA_VERSION) return too_new(db, version);
  if (version == JOBQ_SCHEMA_VERSION) {
    db->schema_missing = 0;
    return JOBQ_OK;
  }
  int foreign = db->store->init_on_open && !has && objects > 0;
  if (db->store->init_on_open && !db->readonly && !foreign) return jobq__migrate(db);
  /* Until jobq init made it, only jobq_init() may go on. */
  db->schema_missing = foreign ? JOBQ__SCHEMA_FOREIGN : 1;
  return JOBQ_OK;
}
