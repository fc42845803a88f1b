/*
 * test_cronspec.c - the schedules of periodic jobs as text and their slots,
 * without a database: what jobq_cron_next() accepts and refuses (with
 * messages naming the field), the edges of the calendar (February 29th,
 * the 31st, Sunday as 0 and 7, cron's rule for the two day fields), the
 * shorthands and @every, daylight-saving changes in America/New_York and
 * Europe/Berlin as Vixie cron runs them, and random schedules checked
 * minute by minute against the C library's own reading of the zone.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Unix ms of an RFC 3339 UTC time "2025-03-09T07:00:00Z". */
static int64_t utc(const char *text) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  if (strptime(text, "%Y-%m-%dT%H:%M:%SZ", &tm) == NULL) fail_msg("bad time %s", text);
  return (int64_t)timegm(&tm) * 1000;
}

static const char *show(int64_t ms, char *buf, size_t len) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/* The slots of spec in tz after after, one after the other, are want[]. */
static void expect_slots(const char *spec, const char *tz, const char *after,
                         const char *const *want, size_t n) {
  int64_t at = utc(after);
  for (size_t i = 0; i < n; i++) {
    int64_t next = 0;
    int rc = jobq_cron_next(NULL, spec, tz, at, &next);
    if (rc != JOBQ_OK) fail_msg("'%s' (%s) after %s: error %d", spec, tz ? tz : "UTC", after, rc);
    char got[40];
    if (next != utc(want[i]))
      fail_msg("'%s' (%s) slot %zu after %s: got %s, expected %s", spec, tz ? tz : "UTC", i + 1,
               after, show(next, got, sizeof got), want[i]);
    at = next;
  }
}
#define SLOTS(spec, tz, after, ...)                                                  \
  do {                                                                               \
    static const char *const w_[] = {__VA_ARGS__};                                   \
    expect_slots((spec), (tz), (after), w_, sizeof w_ / sizeof w_[0]);               \
  } while (0)

static void test_fields(void **state) {
  (void)state;
  SLOTS("*/15 * * * *", NULL, "2025-01-01T00:07:00Z", "2025-01-01T00:15:00Z",
        "2025-01-01T00:30:00Z", "2025-01-01T00:45:00Z", "2025-01-01T01:00:00Z");
  /* A slot is strictly after the time asked about. */
  SLOTS("0 0 * * *", NULL, "2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z");
  SLOTS("0 0 * * *", NULL, "2024-12-31T23:59:59Z", "2025-01-01T00:00:00Z");
  SLOTS("0 12 * * mon-fri", NULL, "2025-01-03T13:00:00Z", "2025-01-06T12:00:00Z",
        "2025-01-07T12:00:00Z");
  /* Names in any case, lists of them, Sunday as 7. */
  SLOTS("0 0 1 jan,JUL *", NULL, "2025-01-02T00:00:00Z", "2025-07-01T00:00:00Z",
        "2026-01-01T00:00:00Z");
  SLOTS("0 0 * * 7", NULL, "2025-01-01T00:00:00Z", "2025-01-05T00:00:00Z");
  SLOTS("0 0 * * sun", NULL, "2025-01-01T00:00:00Z", "2025-01-05T00:00:00Z");
  SLOTS("0 0 * * 5-7", NULL, "2025-01-01T00:00:00Z", "2025-01-03T00:00:00Z",
        "2025-01-04T00:00:00Z", "2025-01-05T00:00:00Z", "2025-01-10T00:00:00Z");
  /* Steps: of a range, of a star, and from a number. */
  SLOTS("0-30/10 9 * * *", NULL, "2025-01-01T00:00:00Z", "2025-01-01T09:00:00Z",
        "2025-01-01T09:10:00Z", "2025-01-01T09:20:00Z", "2025-01-01T09:30:00Z",
        "2025-01-02T09:00:00Z");
  SLOTS("5/20 * * * *", NULL, "2025-01-01T00:00:00Z", "2025-01-01T00:05:00Z",
        "2025-01-01T00:25:00Z", "2025-01-01T00:45:00Z", "2025-01-01T01:05:00Z");
  SLOTS("0 0 1 */5 *", NULL, "2025-01-01T00:00:00Z", "2025-06-01T00:00:00Z",
        "2025-11-01T00:00:00Z", "2026-01-01T00:00:00Z");
  /* The 31st only in the months that have one; February 29th in leap
   * years, over 2100, which has none. */
  SLOTS("0 0 31 * *", NULL, "2025-01-31T00:00:00Z", "2025-03-31T00:00:00Z",
        "2025-05-31T00:00:00Z");
  SLOTS("0 0 29 2 *", NULL, "2025-01-01T00:00:00Z", "2028-02-29T00:00:00Z");
  SLOTS("0 0 29 2 *", NULL, "2096-03-01T00:00:00Z", "2104-02-29T00:00:00Z");
  /* Cron's rule of the day fields: both restricted, either one will do. */
  SLOTS("0 0 13 * fri", NULL, "2025-01-01T00:00:00Z", "2025-01-03T00:00:00Z",
        "2025-01-10T00:00:00Z", "2025-01-13T00:00:00Z", "2025-01-17T00:00:00Z");
  /* ...but a field that starts with '*' is "any", even with a step (as
   * in Vixie cron): odd days that are Fridays. */
  SLOTS("0 0 */2 * fri", NULL, "2025-01-01T00:00:00Z", "2025-01-03T00:00:00Z",
        "2025-01-17T00:00:00Z", "2025-01-31T00:00:00Z");
  SLOTS("  1  2\t3 4 *  ", NULL, "2025-01-01T00:00:00Z", "2025-04-03T02:01:00Z");
}

static void test_shorthands(void **state) {
  (void)state;
  SLOTS("@hourly", NULL, "2025-01-01T00:30:00Z", "2025-01-01T01:00:00Z");
  SLOTS("@daily", NULL, "2025-01-01T00:30:00Z", "2025-01-02T00:00:00Z");
  SLOTS("@midnight", NULL, "2025-01-01T00:30:00Z", "2025-01-02T00:00:00Z");
  SLOTS("@weekly", NULL, "2025-01-01T00:30:00Z", "2025-01-05T00:00:00Z");
  SLOTS("@monthly", NULL, "2025-01-01T00:30:00Z", "2025-02-01T00:00:00Z");
  SLOTS("@yearly", NULL, "2025-01-01T00:30:00Z", "2026-01-01T00:00:00Z");
  SLOTS("@annually", NULL, "2025-01-01T00:30:00Z", "2026-01-01T00:00:00Z");
  /* @every: at the multiples of the period since 1970, whatever the zone. */
  SLOTS("@every 30s", NULL, "2025-01-01T00:00:10Z", "2025-01-01T00:00:30Z",
        "2025-01-01T00:01:00Z");
  SLOTS("@every 1h", "Asia/Kolkata", "2025-01-01T00:10:00Z", "2025-01-01T01:00:00Z");
  SLOTS("@every 1m30s", NULL, "2025-01-01T00:00:00Z", "2025-01-01T00:01:30Z");
  SLOTS("@every   7d", NULL, "2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z");
}

/* America/New_York: on 2025-03-09 02:00 EST becomes 03:00 EDT (07:00Z);
 * on 2025-11-02 02:00 EDT becomes 01:00 EST (06:00Z), and 01:00 to 01:59
 * come twice. */
static void test_dst_new_york(void **state) {
  (void)state;
  const char *ny = "America/New_York";
  /* A fixed time in the skipped hour runs at the change, then as usual. */
  SLOTS("30 2 * * *", ny, "2025-03-08T08:00:00Z", "2025-03-09T07:00:00Z",
        "2025-03-10T06:30:00Z");
  /* A fixed time in the repeated hour runs in its first pass only. */
  SLOTS("30 1 * * *", ny, "2025-11-01T12:00:00Z", "2025-11-02T05:30:00Z",
        "2025-11-03T06:30:00Z");
  /* Two fixed times in the skipped hour: one run at the change. */
  SLOTS("0,30 2 * * *", ny, "2025-03-08T08:00:00Z", "2025-03-09T07:00:00Z",
        "2025-03-10T06:00:00Z");
  /* A job with a star in its hour follows the wall clock: no 02:30 on the
   * day of the skip, both 01:30s on the day of the repeat. */
  SLOTS("30 * * * *", ny, "2025-03-09T05:00:00Z", "2025-03-09T05:30:00Z",
        "2025-03-09T06:30:00Z", "2025-03-09T07:30:00Z", "2025-03-09T08:30:00Z");
  SLOTS("30 * * * *", ny, "2025-11-02T04:00:00Z", "2025-11-02T04:30:00Z",
        "2025-11-02T05:30:00Z", "2025-11-02T06:30:00Z", "2025-11-02T07:30:00Z");
  SLOTS("@hourly", ny, "2025-11-02T04:30:00Z", "2025-11-02T05:00:00Z",
        "2025-11-02T06:00:00Z", "2025-11-02T07:00:00Z");
  /* From inside the repeated hour (its second pass), a fixed 01:30 that
   * already ran waits for the next day. */
  SLOTS("30 1 * * *", ny, "2025-11-02T06:10:00Z", "2025-11-03T06:30:00Z");
  SLOTS("@daily", ny, "2025-03-09T04:00:00Z", "2025-03-09T05:00:00Z",
        "2025-03-10T04:00:00Z");
}

/* Europe/Berlin: on 2025-03-30 02:00 CET becomes 03:00 CEST (01:00Z); on
 * 2025-10-26 03:00 CEST becomes 02:00 CET (01:00Z). */
static void test_dst_berlin(void **state) {
  (void)state;
  const char *be = "Europe/Berlin";
  SLOTS("30 2 * * *", be, "2025-03-29T12:00:00Z", "2025-03-30T01:00:00Z",
        "2025-03-31T00:30:00Z");
  SLOTS("30 2 * * *", be, "2025-10-25T12:00:00Z", "2025-10-26T00:30:00Z",
        "2025-10-27T01:30:00Z");
  SLOTS("*/30 2 * * *", be, "2025-10-25T12:00:00Z", "2025-10-26T00:00:00Z",
        "2025-10-26T00:30:00Z", "2025-10-26T01:00:00Z", "2025-10-26T01:30:00Z",
        "2025-10-27T01:00:00Z");
  SLOTS("0 9 * * mon-fri", be, "2025-03-28T09:00:00Z", "2025-03-31T07:00:00Z");
}

/* jobq_cron_next() refuses spec (and zone tz) with a message containing
 * words. */
static void refused(const char *spec, const char *tz, const char *words) {
  jobq *db = NULL;
  /* A handle that failed to open keeps messages all the same. */
  jobq_open("nosuchscheme:x", &db);
  int64_t next = 0;
  int rc = jobq_cron_next(db, spec, tz, 0, &next);
  if (rc != JOBQ_EINVAL) fail_msg("'%s' (%s) was not refused: %d", spec, tz ? tz : "UTC", rc);
  if (strstr(jobq_errmsg(db), words) == NULL)
    fail_msg("'%s': message \"%s\" lacks \"%s\"", spec, jobq_errmsg(db), words);
  jobq_close(db);
}

static void test_refused(void **state) {
  (void)state;
  refused("60 * * * *", NULL, "minute 60 is out of range 0-59");
  refused("* 24 * * *", NULL, "hour 24 is out of range 0-23");
  refused("* * 0 * *", NULL, "day of month 0 is out of range 1-31");
  refused("* * 32 * *", NULL, "day of month 32 is out of range");
  refused("* * * 13 *", NULL, "month 13 is out of range 1-12");
  refused("* * * * 8", NULL, "day of week 8 is out of range 0-7");
  refused("*/0 * * * *", NULL, "minute step '0'");
  refused("*/61 * * * *", NULL, "minute step '61'");
  refused("5-1 * * * *", NULL, "minute range 5-1 goes backwards");
  refused("fri-mon * * * *", NULL, "minute 'fri': expected a number from 0 to 59");
  refused("* * * * fri-mon", NULL, "day of week range 5-1 goes backwards");
  refused("* * * foo *", NULL, "month 'foo': expected a number from 1 to 12 or a name");
  refused("1,,2 * * * *", NULL, "minute field '1,,2': an empty item");
  refused("1, * * * *", NULL, "minute field '1,': an empty item");
  refused("1; * * * *", NULL, "unexpected ';'");
  refused("99999999999999999999 * * * *", NULL, "out of range");
  refused("* * * *", NULL, "expected 5 fields");
  refused("* * * * * *", NULL, "got 6 fields");
  refused("", NULL, "got 0 fields");
  refused("@reboot", NULL, "expected @every D, @hourly");
  refused("@daily 5", NULL, "expected @every D, @hourly");
  refused("@every", NULL, "expected one duration after @every");
  refused("@every 500ms", NULL, "expected a duration from 1s");
  refused("@every 10x", NULL, "@every '10x'");
  refused("@every 1s 2s", NULL, "expected one duration");
  refused("0 0 30 2 *", NULL, "it never runs");
  refused("0 0 31 4,6,9,11 *", NULL, "it never runs");
  refused("0 0 * * *", "Mars/Olympus", "unknown time zone 'Mars/Olympus'");
  refused("0 0 * * *", "../../etc/passwd", "unknown time zone");
  refused("0 0 * * *", "/etc/localtime", "unknown time zone");
  refused("0 0 * * *", "CET-1CEST,M3.5.0,M10.5.0/3", "unknown time zone");
  refused("0 0 * * *", "", "unknown time zone");
  /* 0 0 30 2 * never runs; with the day of week restricted too, either
   * will do, and it runs on Mondays. */
  int64_t next;
  assert_int_equal(jobq_cron_next(NULL, "0 0 30 2 mon", NULL, 0, &next), JOBQ_OK);
  assert_int_equal(jobq_cron_next(NULL, NULL, NULL, 0, &next), JOBQ_EINVAL);
  assert_int_equal(jobq_cron_next(NULL, "@daily", NULL, -1, &next), JOBQ_EINVAL);
}

/* The zone of the C library, for an independent reading of wall clocks:
 * this test process has one thread. */
static void use_zone(const char *tz) {
  setenv("TZ", tz, 1);
  tzset();
}

static int field_has(const char *field, int v) {
  /* Only the forms the random specs below use: "*", "*\/S", "A", "A-B". */
  if (strcmp(field, "*") == 0) return 1;
  int a, b, s;
  if (sscanf(field, "*/%d", &s) == 1) return v % s == 0;
  if (sscanf(field, "%d-%d", &a, &b) == 2) return v >= a && v <= b;
  return v == strtol(field, NULL, 10);
}

static int wall_matches(char f[5][16], const struct tm *tm) {
  int dom = field_has(f[2], tm->tm_mday), dow = field_has(f[4], tm->tm_wday);
  int day = f[2][0] == '*' || f[4][0] == '*' ? dom && dow : dom || dow;
  return field_has(f[0], tm->tm_min) && field_has(f[1], tm->tm_hour) && day &&
         field_has(f[3], tm->tm_mon + 1);
}

/* Random specs with a star in the hour (jobs that follow the wall clock):
 * every slot's wall time matches, and no minute between two slots does. */
static void test_random_against_libc(void **state) {
  (void)state;
  static const char *const zones[] = {"UTC", "America/New_York", "Europe/Berlin",
                                      "Australia/Lord_Howe", "Asia/Kolkata"};
  unsigned seed = 12345;
  for (int k = 0; k < 300; k++) {
    char f[5][16];
    int r = rand_r(&seed);
    snprintf(f[0], sizeof f[0], "%s", r % 3 == 0 ? "*" : r % 3 == 1 ? "*/7" : "13");
    snprintf(f[1], sizeof f[1], "%s", rand_r(&seed) % 2 ? "*" : "*/5");
    r = rand_r(&seed);
    snprintf(f[2], sizeof f[2], "%s", r % 3 == 0 ? "*" : r % 3 == 1 ? "3-9" : "31");
    snprintf(f[3], sizeof f[3], "%s", rand_r(&seed) % 2 ? "*" : "3-11");
    r = rand_r(&seed);
    snprintf(f[4], sizeof f[4], "%s", r % 3 == 0 ? "*" : r % 3 == 1 ? "1-5" : "0");
    char spec[96];
    snprintf(spec, sizeof spec, "%s %s %s %s %s", f[0], f[1], f[2], f[3], f[4]);
    const char *tz = zones[k % 5];
    use_zone(tz);
    int64_t at = utc("2025-01-01T00:00:00Z") + (int64_t)(rand_r(&seed) % 366) * 86400000 +
                 (int64_t)(rand_r(&seed) % 86400) * 1000;
    for (int i = 0; i < 5; i++) {
      int64_t next;
      if (jobq_cron_next(NULL, spec, tz, at, &next) != JOBQ_OK)
        fail_msg("'%s' (%s) refused", spec, tz);
      assert_true(next > at);
      assert_int_equal(next % 60000, 0);
      time_t t = (time_t)(next / 1000);
      struct tm tm;
      localtime_r(&t, &tm);
      if (!wall_matches(f, &tm)) fail_msg("'%s' (%s): slot %lld does not match", spec, tz,
                                          (long long)next);
      /* No minute between: checked when the slots are near. */
      for (int64_t m = (at / 60000 + 1) * 60000; m < next && next - at < 3 * 86400000LL;
           m += 60000) {
        t = (time_t)(m / 1000);
        localtime_r(&t, &tm);
        if (wall_matches(f, &tm))
          fail_msg("'%s' (%s): minute %lld matches, but the slot after %lld is %lld", spec, tz,
                   (long long)m, (long long)at, (long long)next);
      }
      at = next;
    }
  }
  unsetenv("TZ");
  tzset();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fields),
      cmocka_unit_test(test_shorthands),
      cmocka_unit_test(test_dst_new_york),
      cmocka_unit_test(test_dst_berlin),
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_random_against_libc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
