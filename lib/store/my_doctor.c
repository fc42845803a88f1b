/*
 * my_doctor.c - what jobq doctor checks of a MariaDB / MySQL server:
 * durability settings, replication, and the hot table.
 */
#include <ctype.h>
#include <errmsg.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/my.h"

/* ---------------------------------------------------------------- doctor */

int my_doctor(jobq *db, jobq__checks *k) {
  my *c = my_conn(db);
  MYSQL_RES *res;
  MYSQL_ROW row = my_query_row(db, c->conn,
                            "SELECT VERSION(), @@innodb_flush_log_at_trx_commit, "
                            "@@sync_binlog, @@log_bin, @@innodb_history_list_length",
                            &res, "checking the server");
  if (row == NULL) {
    /* innodb_history_list_length is MariaDB's; MySQL reads it elsewhere. */
    row = my_query_row(db, c->conn,
                    "SELECT VERSION(), @@innodb_flush_log_at_trx_commit, @@sync_binlog, "
                    "@@log_bin, -1",
                    &res, "checking the server");
    if (row == NULL) return db->err;
  }
  jobq__check_add(k, JOBQ_CHECK_OK, "server", NULL, "%s %s",
                  c->mariadb ? "MariaDB" : "MySQL", row[0] ? row[0] : "?");
  int flush_ok = row[1] != NULL && strcmp(row[1], "1") == 0;
  int binlog = row[3] != NULL && !my_is_off(row[3]);
  int sync_ok = !binlog || (row[2] != NULL && strcmp(row[2], "1") == 0);
  if (!flush_ok || !sync_ok)
    jobq__check_add(k, JOBQ_CHECK_FAIL, "durability",
                    "set innodb_flush_log_at_trx_commit = 1 (and sync_binlog = 1 with "
                    "the binary log on): otherwise a crash of the server or the machine "
                    "loses puts and acknowledgements jobq already confirmed",
                    "innodb_flush_log_at_trx_commit = %s, sync_binlog = %s, binary log %s",
                    row[1] ? row[1] : "?", row[2] ? row[2] : "?", binlog ? "on" : "off");
  else
    jobq__check_add(k, JOBQ_CHECK_OK, "durability", NULL,
                    "innodb_flush_log_at_trx_commit = 1%s: every commit waits for the log",
                    binlog ? ", sync_binlog = 1" : "");
  long long history = row[4] ? strtoll(row[4], NULL, 10) : -1;
  mysql_free_result(res);
  /* The oldest transaction holds back the purge of old row versions,
   * which the hot table's churn piles up. */
  static const char oldest[] =
      "SELECT trx_mysql_thread_id, TIMESTAMPDIFF(SECOND, trx_started, NOW()), "
      "trx_state, LEFT(REPLACE(coalesce(trx_query, ''), '\n', ' '), 60) FROM "
      "information_schema.INNODB_TRX ORDER BY trx_started LIMIT 1";
  if (mysql_real_query(c->conn, oldest, sizeof oldest - 1) != 0) {
    unsigned err = mysql_errno(c->conn);
    if (err != ER_SPECIFIC_ACCESS_DENIED_ERROR && err != ER_TABLEACCESS_DENIED_ERROR)
      return my_error(db, err, mysql_error(c->conn), "checking transactions");
    /* The other logins' transactions are for the PROCESS privilege. */
    jobq__check_add(k, JOBQ_CHECK_WARN, "purge",
                    "grant the login PROCESS (GRANT PROCESS ON *.* TO ...) for this check",
                    "cannot see other transactions: the login lacks the PROCESS "
                    "privilege");
    return JOBQ_OK;
  }
  res = mysql_store_result(c->conn);
  row = res ? mysql_fetch_row(res) : NULL;
  long long age = row && row[1] ? strtoll(row[1], NULL, 10) : 0;
  if (row != NULL && age >= 60)
    jobq__check_add(k, age >= 600 ? JOBQ_CHECK_FAIL : JOBQ_CHECK_WARN, "purge",
                    "a long transaction keeps InnoDB from purging old row versions, so "
                    "the hot table's indexes fill with them and claims slow down: end it "
                    "(KILL ID) and keep transactions short",
                    "the oldest transaction has been open for %llds: connection %s, %s: %s",
                    age, row[0] ? row[0] : "?", row[2] ? row[2] : "?", row[3] ? row[3] : "");
  else if (history > 100000)
    jobq__check_add(k, JOBQ_CHECK_WARN, "purge",
                    "purge is behind: look for long transactions and a busy server",
                    "%lld undo records wait for purge", history);
  else
    jobq__check_add(k, JOBQ_CHECK_OK, "purge", NULL,
                    "no transaction older than a minute holds purge back");
  if (res) mysql_free_result(res);
  return JOBQ_OK;
}

