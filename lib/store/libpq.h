/*
 * libpq.h - libpq as the PostgreSQL store calls it: through a table of
 * its functions, filled when the first PostgreSQL URL is opened
 * (jobq__libpq_load(), clientlib.c).  A program that never opens one
 * never loads libpq, nor the TLS, Kerberos and LDAP libraries it pulls
 * in.  Include this instead of <libpq-fe.h>; each function below is then
 * a call through the table, under its own name.  A function the store
 * starts to use is added to the list and to the #defines.  (jobq-bench's
 * bare SQL keeps a table of its own, bench/sql.h.)
 */
#ifndef JOBQ_LIBPQ_H
#define JOBQ_LIBPQ_H

#include <libpq-fe.h>

#include "jobq.h"

/* The soname the table is filled from: libpq 14 or later (pipelines). */
#define JOBQ_LIBPQ_SONAME "libpq.so.5"

#define JOBQ_LIBPQ_FUNCS(X)                                                   \
  X(PQbackendPID) X(PQclear) X(PQcmdStatus) X(PQcmdTuples) X(PQconnectPoll)    \
  X(PQconnectStartParams) X(PQconnectionNeedsPassword) X(PQconninfoFree)       \
  X(PQconninfoParse) X(PQsetErrorVerbosity)                                    \
  X(PQconsumeInput) X(PQenterPipelineMode) X(PQerrorMessage) X(PQexec)         \
  X(PQexecParams) X(PQexecPrepared) X(PQexitPipelineMode) X(PQfinish)          \
  X(PQfreemem) X(PQftype) X(PQgetResult) X(PQgetisnull) X(PQgetlength)         \
  X(PQgetvalue) X(PQhost) X(PQisBusy) X(PQnotifies) X(PQntuples) X(PQpipelineSync) X(PQport) X(PQprepare)      \
  X(PQresultErrorField) X(PQresultErrorMessage) X(PQresultStatus)              \
  X(PQsendQueryParams) X(PQsendQueryPrepared) X(PQserverVersion)               \
  X(PQsetNoticeProcessor) X(PQsetnonblocking) X(PQsocket) X(PQstatus)          \
  X(PQtransactionStatus)

struct jobq__libpq {
#define JOBQ_LIBPQ_SLOT(f) __typeof__(f) *f##_;
  JOBQ_LIBPQ_FUNCS(JOBQ_LIBPQ_SLOT)
#undef JOBQ_LIBPQ_SLOT
};
extern struct jobq__libpq jobq__libpq;

/* Loads libpq once per process; JOBQ_ENOTSUP, with db's message naming
 * the library and the reason, when it cannot be loaded.  Thread-safe. */
int jobq__libpq_load(jobq *db);

#define PQbackendPID (jobq__libpq.PQbackendPID_)
#define PQclear (jobq__libpq.PQclear_)
#define PQcmdStatus (jobq__libpq.PQcmdStatus_)
#define PQcmdTuples (jobq__libpq.PQcmdTuples_)
#define PQconnectPoll (jobq__libpq.PQconnectPoll_)
#define PQconnectStartParams (jobq__libpq.PQconnectStartParams_)
#define PQconnectionNeedsPassword (jobq__libpq.PQconnectionNeedsPassword_)
#define PQconninfoFree (jobq__libpq.PQconninfoFree_)
#define PQconninfoParse (jobq__libpq.PQconninfoParse_)
#define PQsetErrorVerbosity (jobq__libpq.PQsetErrorVerbosity_)
#define PQconsumeInput (jobq__libpq.PQconsumeInput_)
#define PQenterPipelineMode (jobq__libpq.PQenterPipelineMode_)
#define PQerrorMessage (jobq__libpq.PQerrorMessage_)
#define PQexec (jobq__libpq.PQexec_)
#define PQexecParams (jobq__libpq.PQexecParams_)
#define PQexecPrepared (jobq__libpq.PQexecPrepared_)
#define PQexitPipelineMode (jobq__libpq.PQexitPipelineMode_)
#define PQfinish (jobq__libpq.PQfinish_)
#define PQfreemem (jobq__libpq.PQfreemem_)
#define PQftype (jobq__libpq.PQftype_)
#define PQgetResult (jobq__libpq.PQgetResult_)
#define PQgetisnull (jobq__libpq.PQgetisnull_)
#define PQgetlength (jobq__libpq.PQgetlength_)
#define PQgetvalue (jobq__libpq.PQgetvalue_)
#define PQhost (jobq__libpq.PQhost_)
#define PQisBusy (jobq__libpq.PQisBusy_)
#define PQnotifies (jobq__libpq.PQnotifies_)
#define PQntuples (jobq__libpq.PQntuples_)
#define PQpipelineSync (jobq__libpq.PQpipelineSync_)
#define PQport (jobq__libpq.PQport_)
#define PQprepare (jobq__libpq.PQprepare_)
#define PQresultErrorField (jobq__libpq.PQresultErrorField_)
#define PQresultErrorMessage (jobq__libpq.PQresultErrorMessage_)
#define PQresultStatus (jobq__libpq.PQresultStatus_)
#define PQsendQueryParams (jobq__libpq.PQsendQueryParams_)
#define PQsendQueryPrepared (jobq__libpq.PQsendQueryPrepared_)
#define PQserverVersion (jobq__libpq.PQserverVersion_)
#define PQsetNoticeProcessor (jobq__libpq.PQsetNoticeProcessor_)
#define PQsetnonblocking (jobq__libpq.PQsetnonblocking_)
#define PQsocket (jobq__libpq.PQsocket_)
#define PQstatus (jobq__libpq.PQstatus_)
#define PQtransactionStatus (jobq__libpq.PQtransactionStatus_)

#endif
