/*
 * cronspec.c - the schedules of periodic jobs as text, and their slots in
 * time: the five fields of cron (minute, hour, day of month, month, day
 * of week, with lists, ranges, steps and the names of months and days),
 * the shorthands @hourly to @yearly, and @every DURATION.
 *
 * A slot is an instant (Unix ms).  A schedule of fields is matched on the
 * wall clock of its zone, and the wall clock's minutes are turned into
 * instants as Vixie cron and cronie do around daylight-saving changes:
 * a job "at a fixed time" (neither its minute nor its hour field starts
 * with '*') whose time falls in the hour that the clock skips runs once,
 * at the change, and once only in the hour that repeats (its first
 * pass); any other job follows the wall clock: nothing in the skipped
 * hour, each pass of the repeated one.  @every slots are the multiples
 * of the period since 1970-01-01T00:00:00Z, whatever the zone.
 *
 * Zones are the system's tzdata (/usr/share/zoneinfo, or $TZDIR) read by
 * GLib's GTimeZone, which keeps no process-wide setting: the library
 * touches neither TZ nor the C library's zone, so threads and other
 * handles are not disturbed.
 */
#include <ctype.h>
#include <glib.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Offset changes are shorter than this, as cron assumes: the wall
 * clock's minutes more than this apart are in the same order as their
 * instants. */
#define SHIFT_MAX_MIN 180
/* How far a search for the next matching day goes: February 29th may be
 * eight years away (2096 to 2104). */
#define SEARCH_DAYS (9 * 366)

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The proleptic Gregorian date of day z since 1970-01-01 (H. Hinnant's
 * algorithm). */
static void civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
  z += 719468;
  int64_t era = floor_div(z, 146097);
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

/* ---------------------------------------------------------------- parsing */

static const char *const months[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                     "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const days[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

static const struct field {
  const char *name;
  int lo, hi;
  const char *const *names; /* names[i] is lo + i */
  int nnames;
} fields[5] = {
    {"minute", 0, 59, NULL, 0},
    {"hour", 0, 23, NULL, 0},
    {"day of month", 1, 31, NULL, 0},
    {"month", 1, 12, months, 12},
    {"day of week", 0, 7, days, 7},
};

/* The shorthands, as cron expands them. */
static const struct {
  const char *name, *fields;
} shorthands[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

typedef struct parser {
  jobq *db;
  const char *spec;  /* the whole text, for messages */
} parser;

static int bad(const parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(const parser *p, const char *fmt, ...) {
  char why[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return jobq__fail(p->db, JOBQ_EINVAL, "invalid schedule '%.300s': %s", p->spec, why);
}

/* A number or (months, days) a name at *s, advancing it; -1 after a
 * message when there is neither. */
static int value(const parser *p, const struct field *f, const char **s, int *out) {
  const char *t = *s;
  size_t digits = strspn(t, "0123456789");
  if (digits > 0) {
    long v = digits > 3 ? 1000 : strtol(t, NULL, 10);
    if (v < f->lo || v > f->hi)
      return bad(p, "%s %.*s is out of range %d-%d", f->name, (int)digits, t, f->lo, f->hi);
    *out = (int)v;
    *s = t + digits;
    return JOBQ_OK;
  }
  for (int i = 0; i < f->nnames; i++) {
    if (strncasecmp(t, f->names[i], 3) == 0 && !isalpha((unsigned char)t[3])) {
      *out = f->lo + i;
      *s = t + 3;
      return JOBQ_OK;
    }
  }
  int len = (int)strcspn(t, ",-/");
  if (f->names != NULL)
    return bad(p, "%s '%.*s': expected a number from %d to %d or a name like %s", f->name, len,
               t, f->lo, f->hi, f->names[1]);
  return bad(p, "%s '%.*s': expected a number from %d to %d", f->name, len, t, f->lo, f->hi);
}

/* One field's text (len bytes at s) into its bits. */
static int field(const parser *p, const struct field *f, const char *s, size_t len,
                 uint64_t *bits) {
  char text[128];
  if (len >= sizeof text) return bad(p, "the %s field is too long", f->name);
  memcpy(text, s, len);
  text[len] = '\0';
  *bits = 0;
  const char *t = text;
  for (;;) {
    int a, b, step = 1, rc, single = 0;
    if (*t == ',' || *t == '\0') return bad(p, "%s field '%s': an empty item", f->name, text);
    if (*t == '*') {
      a = f->lo;
      b = f->hi;
      t++;
    } else {
      if ((rc = value(p, f, &t, &a)) != JOBQ_OK) return rc;
      b = a;
      single = *t != '-';
      if (*t == '-') {
        t++;
        if ((rc = value(p, f, &t, &b)) != JOBQ_OK) return rc;
        if (b < a)
          return bad(p, "%s range %d-%d goes backwards: expected the smaller first", f->name,
                     a, b);
      }
    }
    if (*t == '/') {
      const char *d = ++t;
      size_t digits = strspn(d, "0123456789");
      long v = digits == 0 || digits > 3 ? 0 : strtol(d, NULL, 10);
      if (v < 1 || v > f->hi + 1 - f->lo)
        return bad(p, "%s step '%.*s': expected a number from 1 to %d", f->name,
                   (int)strcspn(d, ","), d, f->hi + 1 - f->lo);
      step = (int)v;
      t = d + digits;
      /* "5/15" is "5-59/15", as in many crons. */
      if (single) b = f->hi;
    }
    for (int v = a; v <= b; v += step) *bits |= 1ULL << v;
    if (*t == '\0') break;
    if (*t != ',')
      return bad(p, "%s field '%s': unexpected '%c': expected a list like 1,5-9,*/15", f->name,
                 text, *t);
    t++;
  }
  return JOBQ_OK;
}

/* The five fields, given as text, into s. */
static int fields_parse(const parser *p, const char *text, jobq__cron_spec *s) {
  const char *at[6];
  size_t len[6];
  int n = 0;
  for (const char *t = text; *t != '\0';) {
    t += strspn(t, " \t");
    if (*t == '\0') break;
    size_t l = strcspn(t, " \t");
    if (n < 6) {
      at[n] = t;
      len[n] = l;
    }
    n++;
    t += l;
  }
  if (n != 5)
    return bad(p, "expected 5 fields (minute hour day-of-month month day-of-week) or "
                  "@every D, @hourly, @daily, @weekly, @monthly, @yearly; got %d field%s",
               n, n == 1 ? "" : "s");
  uint64_t bits[5];
  for (int i = 0; i < 5; i++) {
    int rc = field(p, &fields[i], at[i], len[i], &bits[i]);
    if (rc != JOBQ_OK) return rc;
  }
  s->minute = bits[0];
  s->hour = (uint32_t)bits[1];
  s->dom = (uint32_t)bits[2];
  s->month = (uint16_t)bits[3];
  /* Sunday is 0 or 7. */
  s->dow = (uint8_t)((bits[4] | bits[4] >> 7) & 0x7f);
  /* As cron: a field that starts with '*' is "any", for the rule of the
   * two day fields and for daylight saving. */
  s->dom_any = at[2][0] == '*';
  s->dow_any = at[4][0] == '*';
  s->wild = at[0][0] == '*' || at[1][0] == '*';
  /* With one day field "any", the other decides alone: a day of month
   * that no month of the schedule has would never come. */
  if (s->dow_any && !s->dom_any) {
    static const int mdays[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int some = 0;
    for (int m = 1; m <= 12 && !some; m++)
      if (s->month & (1u << m)) some = (s->dom & ((2u << mdays[m]) - 2)) != 0;
    if (!some) return bad(p, "no month of the schedule has its days of month: it never runs");
  }
  return JOBQ_OK;
}

/* A zone name is a file under the zone folder: letters, digits and
 * "_+-", in parts parted by '/', none starting with '.'. */
static int zone_open(jobq *db, const char *tz, void **zone) {
  *zone = NULL;
  if (strcmp(tz, "UTC") == 0) return JOBQ_OK;
  size_t n = strlen(tz);
  int ok = n > 0 && n <= JOBQ_CRON_TEXT_MAX && tz[0] != '/' && tz[n - 1] != '/' &&
           strstr(tz, "//") == NULL && strspn(tz, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"
                                                  "opqrstuvwxyz0123456789_+-/") == n;
  for (const char *t = tz; ok && t != NULL; t = strchr(t, '/'), t = t ? t + 1 : NULL)
    ok = *t != '.' && *t != '-';
  char path[4096];
  const char *dir = getenv("TZDIR");
  if (ok) {
    snprintf(path, sizeof path, "%s/%s", dir != NULL && *dir ? dir : "/usr/share/zoneinfo",
             tz);
    ok = access(path, R_OK) == 0;
  }
  GTimeZone *z = ok ? g_time_zone_new_identifier(tz) : NULL;
  if (z == NULL)
    return jobq__fail(db, JOBQ_EINVAL,
                      "unknown time zone '%.300s': expected a name of the system's tzdata "
                      "like Europe/Berlin or America/New_York, or UTC",
                      tz);
  *zone = z;
  return JOBQ_OK;
}

int jobq__cron_parse(jobq *db, const char *spec, const char *tz, jobq__cron_spec *s) {
  memset(s, 0, sizeof *s);
  if (spec == NULL) return jobq__fail(db, JOBQ_EINVAL, "missing schedule: expected one like '*/5 * * * *'");
  parser p = {db, spec};
  if (strlen(spec) > JOBQ_CRON_TEXT_MAX)
    return bad(&p, "longer than %d bytes", JOBQ_CRON_TEXT_MAX);
  const char *t = spec + strspn(spec, " \t");
  int rc;
  if (*t == '@') {
    size_t w = strcspn(t, " \t");
    const char *rest = t + w + strspn(t + w, " \t");
    if (w == 6 && strncmp(t, "@every", 6) == 0) {
      char d[64];
      size_t dl = strcspn(rest, " \t");
      if (dl == 0 || dl >= sizeof d || rest[dl + strspn(rest + dl, " \t")] != '\0')
        return bad(&p, "expected one duration after @every, like @every 30s");
      memcpy(d, rest, dl);
      d[dl] = '\0';
      if (jobq_parse_duration(d, &s->every_ms) != JOBQ_OK || s->every_ms < 1000 ||
          s->every_ms > JOBQ_DURATION_MAX_MS)
        return bad(&p, "@every '%s': expected a duration from 1s to 100 years, like 30s or 1h",
                   d);
      rc = JOBQ_OK;
    } else {
      const char *fields_text = NULL;
      for (size_t i = 0; i < sizeof shorthands / sizeof shorthands[0]; i++)
        if (strlen(shorthands[i].name) == w && strncmp(t, shorthands[i].name, w) == 0)
          fields_text = shorthands[i].fields;
      if (fields_text == NULL || *rest != '\0')
        return bad(&p, "expected @every D, @hourly, @daily, @weekly, @monthly or @yearly");
      rc = fields_parse(&p, fields_text, s);
    }
  } else {
    rc = fields_parse(&p, t, s);
  }
  if (rc == JOBQ_OK) rc = zone_open(db, tz != NULL ? tz : "UTC", &s->zone);
  return rc;
}

void jobq__cron_spec_release(jobq__cron_spec *s) {
  if (s->zone != NULL) g_time_zone_unref(s->zone);
  s->zone = NULL;
}

/* ---------------------------------------------------------------- slots */

/* Seconds east of UTC at Unix second t. */
static int64_t offset_at(const jobq__cron_spec *s, int64_t t) {
  if (s->zone == NULL) return 0;
  GTimeZone *z = s->zone;
  return g_time_zone_get_offset(z, g_time_zone_find_interval(z, G_TIME_TYPE_UNIVERSAL, t));
}

static int day_matches(const jobq__cron_spec *s, int64_t day, int m, int d) {
  if (!(s->month & (1u << m))) return 0;
  int wd = (int)(((day + 4) % 7 + 7) % 7); /* 1970-01-01 was a Thursday */
  int dom = (s->dom >> d) & 1, dow = (s->dow >> wd) & 1;
  /* Cron's rule: both day fields restricted, either one will do. */
  return s->dom_any || s->dow_any ? dom && dow : dom || dow;
}

/* The first minute of the wall clock (minutes since 1970-01-01 00:00 of
 * that clock) after w that the fields match; -1 when none comes within
 * SEARCH_DAYS. */
static int64_t wall_next(const jobq__cron_spec *s, int64_t w) {
  int64_t m = w + 1, day = floor_div(m, 1440);
  int h = (int)((m - day * 1440) / 60), mi = (int)((m - day * 1440) % 60);
  for (int i = 0; i < SEARCH_DAYS; i++, day++, h = 0, mi = 0) {
    int64_t y;
    int mo, d;
    civil_from_days(day, &y, &mo, &d);
    if (!day_matches(s, day, mo, d)) continue;
    for (int hh = h; hh < 24; hh++) {
      if (!((s->hour >> hh) & 1)) continue;
      int from = hh == h ? mi : 0;
      uint64_t mins = s->minute >> from;
      if (mins != 0) return day * 1440 + hh * 60 + from + __builtin_ctzll(mins);
    }
  }
  return -1;
}

/* The instants (Unix seconds) of wall minute w, as cron runs them: *n is
 * 0, 1 or 2. */
static void wall_slots(const jobq__cron_spec *s, int64_t w, int64_t out[2], int *n) {
  int64_t ws = w * 60;
  int64_t before = offset_at(s, ws - 86400), after = offset_at(s, ws + 86400);
  int64_t a = ws - before, b = ws - after;
  int a_ok = offset_at(s, a) == before, b_ok = before != after && offset_at(s, b) == after;
  *n = 0;
  if (a_ok && b_ok) {
    /* The clock went back over w: a fixed time runs in the first pass. */
    out[(*n)++] = a < b ? a : b;
    if (s->wild) out[(*n)++] = a < b ? b : a;
  } else if (a_ok || b_ok) {
    out[(*n)++] = a_ok ? a : b;
  } else if (!s->wild) {
    /* The clock skipped w: a fixed time runs at the change, the first
     * instant whose offset is the new one. */
    int64_t lo = a < b ? a : b, hi = a < b ? b : a, off = offset_at(s, lo);
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      if (offset_at(s, mid) == off)
        lo = mid;
      else
        hi = mid;
    }
    out[(*n)++] = hi;
  }
}

int jobq__cron_next(jobq *db, const jobq__cron_spec *s, int64_t after_ms, int64_t *next_ms) {
  int64_t next;
  if (s->every_ms > 0) {
    next = (floor_div(after_ms, s->every_ms) + 1) * s->every_ms;
  } else {
    int64_t after_s = floor_div(after_ms, 1000), margin = s->zone ? SHIFT_MAX_MIN : 0;
    int64_t w = floor_div(after_s + offset_at(s, after_s), 60) - margin;
    int64_t best = INT64_MAX, best_w = 0;
    for (;;) {
      if ((w = wall_next(s, w)) < 0) break;
      if (best != INT64_MAX && w > best_w + margin) break;
      int64_t at[2];
      int n;
      wall_slots(s, w, at, &n);
      for (int i = 0; i < n; i++)
        if (at[i] * 1000 > after_ms && at[i] < best) {
          best = at[i];
          best_w = w;
        }
    }
    next = best == INT64_MAX ? -1 : best * 1000;
  }
  if (next < 0 || next > JOBQ_TIME_MAX_MS)
    return jobq__fail(db, JOBQ_EINVAL, "the schedule has no slot after %lld before the year 10000",
                      (long long)after_ms);
  *next_ms = next;
  return JOBQ_OK;
}

int jobq__cron_latest(jobq *db, const jobq__cron_spec *s, int64_t first_ms, int64_t now_ms,
                      int64_t *slot_ms) {
  *slot_ms = 0;
  if (first_ms > now_ms) return JOBQ_OK;
  if (s->every_ms > 0) {
    int64_t at = floor_div(now_ms, s->every_ms) * s->every_ms;
    if (at >= first_ms) *slot_ms = at;
    return JOBQ_OK;
  }
  /* Walked from just before first, or, when nothing ran for long, from
   * the shortest step back from now that holds a slot: the slots walked
   * are about as many as that step holds, however long nothing ran. */
  static const int64_t back[] = {3600000LL, 86400000LL, 32 * 86400000LL, 367 * 86400000LL};
  int64_t from = first_ms - 1, at;
  int rc;
  for (size_t i = 0; i < sizeof back / sizeof back[0]; i++) {
    if (now_ms - back[i] <= from) break;
    if ((rc = jobq__cron_next(db, s, now_ms - back[i], &at)) != JOBQ_OK) return rc;
    if (at <= now_ms) {
      from = now_ms - back[i];
      break;
    }
  }
  if ((rc = jobq__cron_next(db, s, from, &at)) != JOBQ_OK) return rc;
  if (at > now_ms) return JOBQ_OK;
  for (int64_t next;; at = next) {
    if ((rc = jobq__cron_next(db, s, at, &next)) != JOBQ_OK) return rc;
    if (next > now_ms) break;
  }
  *slot_ms = at;
  return JOBQ_OK;
}

int jobq_cron_next(jobq *db, const char *spec, const char *tz, int64_t after_ms,
                   int64_t *next_ms) {
  if (db != NULL) jobq__ok(db);
  if (after_ms < 0 || after_ms > JOBQ_TIME_MAX_MS)
    return jobq__fail(db, JOBQ_EINVAL, "invalid time %lld: expected 0 to %lld ms", (long long)after_ms,
                      (long long)JOBQ_TIME_MAX_MS);
  jobq__cron_spec s;
  int rc = jobq__cron_parse(db, spec, tz, &s);
  if (rc == JOBQ_OK) rc = jobq__cron_next(db, &s, after_ms, next_ms);
  jobq__cron_spec_release(&s);
  return rc;
}
