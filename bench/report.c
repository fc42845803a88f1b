/*
 * report.c - what `jobq bench` measured, and its four outputs: a
 * table on stdout (cli/output.h), one JSON document with --json, a CSV
 * file of one row per measurement (--csv) and an SVG drawing (--plot) of
 * the throughputs and the latency percentiles, written as plain SVG text.
 * The points of a series (a soak's every window) would drown the table
 * and the bars: they go to the JSON document and the CSV file, and the
 * drawing shows them as lines.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "output.h"
#include "util.h"

void bench_add(struct bench_report *r, const char *workload,
               const char *variant, const char *metric, double value,
               const char *unit) {
  if (r->nresults == r->alloc) {
    r->alloc = r->alloc ? 2 * r->alloc : 32;
    r->results = cli_xrealloc(r->results, r->alloc * sizeof *r->results);
  }
  struct bench_result *m = &r->results[r->nresults++];
  snprintf(m->workload, sizeof m->workload, "%s", workload);
  snprintf(m->variant, sizeof m->variant, "%s", variant);
  snprintf(m->metric, sizeof m->metric, "%s", metric);
  snprintf(m->unit, sizeof m->unit, "%s", unit);
  m->value = isfinite(value) ? value : 0;
  m->series = 0;
}

void bench_add_series(struct bench_report *r, const char *workload,
                      const char *variant, const char *metric, double value,
                      const char *unit) {
  bench_add(r, workload, variant, metric, value, unit);
  r->results[r->nresults - 1].series = 1;
}

double bench_find(const struct bench_report *r, const char *workload,
                  const char *variant, const char *metric) {
  for (size_t i = 0; i < r->nresults; i++) {
    const struct bench_result *m = &r->results[i];
    if (strcmp(m->workload, workload) == 0 && strcmp(m->variant, variant) == 0 &&
        strcmp(m->metric, metric) == 0)
      return m->value;
  }
  return -1;
}

void bench_report_release(struct bench_report *r) {
  free(r->results);
  memset(r, 0, sizeof *r);
}

static const char *status_word(int status) {
  switch (status) {
    case BENCH_OK: return "ok";
    case BENCH_SKIPPED: return "not run";
    case BENCH_INTERRUPTED: return "interrupted";
    default: return "failed";
  }
}

static const char *store_name(int store) {
  return store == BENCH_POSTGRES ? "postgres" : store == BENCH_MYSQL ? "mysql" : "sqlite";
}

/* A value as people read it: whole jobs per second, two decimals else. */
static void fmt_value(char *buf, size_t size, const struct bench_result *m) {
  if (strcmp(m->unit, "jobs/s") == 0 || strcmp(m->unit, "jobs") == 0)
    snprintf(buf, size, "%.0f", m->value);
  else if (strcmp(m->unit, "%") == 0)
    snprintf(buf, size, m->value < 1 ? "%.3f" : "%.1f", m->value);
  else
    snprintf(buf, size, "%.2f", m->value);
}

/* ---------------------------------------------------------------- stdout */

static void print_json(const struct bench_config *cfg, const struct bench_report *r) {
  json_t *doc = cli_json_object();
  cli_json_set(doc, "database", cli_json_str(cfg->shown));
  cli_json_set(doc, "store", cli_json_str(store_name(cfg->store)));
  cli_json_set(doc, "jobs", json_integer(cfg->jobs));
  cli_json_set(doc, "machine", bench_machine_json(&cfg->machine));
  json_t *list = json_array();
  if (list == NULL) cli_oom();
  for (size_t i = 0; i < r->nruns; i++) {
    const struct bench_run *run = &r->runs[i];
    json_t *w = cli_json_object();
    if (json_array_append_new(list, w) != 0) cli_oom();
    cli_json_set(w, "name", cli_json_str(run->name));
    cli_json_set(w, "status", cli_json_str(run->status == BENCH_SKIPPED ? "not_run"
                                                                    : status_word(run->status)));
    cli_json_set(w, "seconds", json_real(run->seconds));
    if (run->verified >= 0) cli_json_set(w, "verified", json_boolean(run->verified));
    cli_json_set(w, "error", run->status == BENCH_OK ? json_null() : cli_json_str(run->why));
    json_t *res = json_array();
    if (res == NULL) cli_oom();
    for (size_t k = 0; k < r->nresults; k++) {
      const struct bench_result *m = &r->results[k];
      if (strcmp(m->workload, run->name) != 0) continue;
      json_t *o = cli_json_object();
      if (json_array_append_new(res, o) != 0) cli_oom();
      cli_json_set(o, "variant", cli_json_str(m->variant));
      cli_json_set(o, "metric", cli_json_str(m->metric));
      cli_json_set(o, "value", json_real(m->value));
      cli_json_set(o, "unit", cli_json_str(m->unit));
      if (m->series) cli_json_set(o, "series", json_true());
    }
    cli_json_set(w, "results", res);
  }
  cli_json_set(doc, "workloads", list);
  cli_json_print(doc);
}

void bench_print(const struct bench_config *cfg, const struct bench_report *r) {
  if (cli_global.json) {
    print_json(cfg, r);
    return;
  }
  static const struct cli_column cols[] = {
      {"WORKLOAD", 0}, {"VARIANT", 0}, {"METRIC", 0}, {"VALUE", 1}, {"UNIT", 0}};
  struct cli_table t;
  cli_table_init(&t, cols, sizeof cols / sizeof cols[0]);
  for (size_t i = 0; i < r->nruns; i++) {
    const struct bench_run *run = &r->runs[i];
    for (size_t k = 0; k < r->nresults; k++) {
      const struct bench_result *m = &r->results[k];
      if (strcmp(m->workload, run->name) != 0 || m->series) continue;
      char v[64];
      fmt_value(v, sizeof v, m);
      cli_table_cell(&t, "%s", m->workload);
      cli_table_cell(&t, "%s", m->variant);
      cli_table_cell(&t, "%s", m->metric);
      cli_table_cell(&t, "%s", v);
      cli_table_cell(&t, "%s", m->unit);
    }
    if (run->verified == 1) {
      cli_table_cell(&t, "%s", run->name);
      cli_table_cell(&t, "all");
      cli_table_cell(&t, "exactly once");
      cli_table_cell(&t, "yes");
      cli_table_cell(&t, "-");
    }
    if (run->status != BENCH_OK) {
      cli_table_cell(&t, "%s", run->name);
      cli_table_cell(&t, "-");
      cli_table_cell(&t, "status");
      cli_table_cell(&t, "%s", status_word(run->status));
      cli_table_cell(&t, "-");
    }
  }
  cli_table_print(&t);
  cli_table_release(&t);
}

/* ---------------------------------------------------------------- CSV */

/* A CSV field: quoted when it holds a comma, a quote or a line break. */
static void csv_field(FILE *f, const char *s) {
  if (strpbrk(s, ",\"\r\n") == NULL) {
    fputs(s, f);
    return;
  }
  putc('"', f);
  for (; *s; s++) {
    if (*s == '"') putc('"', f);
    putc(*s, f);
  }
  putc('"', f);
}

int bench_write_csv(FILE *f, const struct bench_report *r) {
  fputs("workload,variant,metric,value,unit\n", f);
  for (size_t i = 0; i < r->nresults; i++) {
    const struct bench_result *m = &r->results[i];
    csv_field(f, m->workload);
    putc(',', f);
    csv_field(f, m->variant);
    putc(',', f);
    csv_field(f, m->metric);
    fprintf(f, ",%.6g,", m->value);
    csv_field(f, m->unit);
    putc('\n', f);
  }
  return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

/* ---------------------------------------------------------------- SVG */

#define SVG_WIDTH 900
#define SVG_LABEL 300    /* the labels' column */
#define SVG_BARS 480     /* the longest bar */
#define SVG_ROW 24

static void xml_text(FILE *f, const char *s) {
  for (; *s; s++) {
    switch (*s) {
      case '&': fputs("&amp;", f); break;
      case '<': fputs("&lt;", f); break;
      case '>': fputs("&gt;", f); break;
      case '"': fputs("&quot;", f); break;
      default:
        if ((unsigned char)*s >= 0x20) putc(*s, f);
    }
  }
}

/* Whether measurement m belongs in the chart of unit. */
static int in_chart(const struct bench_result *m, const char *unit) {
  return !m->series && strcmp(m->unit, unit) == 0;
}

static const char *bar_colour(const struct bench_result *m) {
  if (strcmp(m->metric, "p50") == 0) return "#4e79a7";
  if (strcmp(m->metric, "p99") == 0) return "#f28e2b";
  if (strcmp(m->metric, "max") == 0) return "#e15759";
  if (strstr(m->metric, "ceiling") != NULL) return "#bab0ac"; /* bare SQL's rates */
  return "#59a14f";
}

/* One chart of horizontal bars, a row per measurement of unit, from y;
 * returns the y below it. */
static int svg_chart(FILE *f, const struct bench_report *r, const char *title,
                     const char *unit, int y) {
  double max = 0;
  size_t n = 0;
  for (size_t i = 0; i < r->nresults; i++) {
    if (!in_chart(&r->results[i], unit)) continue;
    if (r->results[i].value > max) max = r->results[i].value;
    n++;
  }
  fprintf(f, "<text x=\"20\" y=\"%d\" font-size=\"16\" font-weight=\"bold\">", y + 20);
  xml_text(f, title);
  fputs("</text>\n", f);
  y += 34;
  if (n == 0) {
    fprintf(f, "<text x=\"20\" y=\"%d\" font-size=\"12\">none measured</text>\n", y + 14);
    return y + SVG_ROW + 10;
  }
  for (size_t i = 0; i < r->nresults; i++) {
    const struct bench_result *m = &r->results[i];
    if (!in_chart(m, unit)) continue;
    char label[160], v[64];
    if (strcmp(unit, "ms") == 0 || strcmp(m->metric, "throughput") != 0)
      snprintf(label, sizeof label, "%s %s %s", m->workload, m->variant, m->metric);
    else
      snprintf(label, sizeof label, "%s %s", m->workload, m->variant);
    fmt_value(v, sizeof v, m);
    double w = max > 0 ? m->value / max * SVG_BARS : 0;
    if (w < 1 && m->value > 0) w = 1;
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\">",
            SVG_LABEL - 8, y + 16);
    xml_text(f, label);
    fputs("</text>\n", f);
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n"
            "<text x=\"%.1f\" y=\"%d\" font-size=\"12\">%s %s</text>\n",
            SVG_LABEL, y + 3, w, SVG_ROW - 6, bar_colour(m), SVG_LABEL + w + 6, y + 16,
            v, m->unit);
    y += SVG_ROW;
  }
  return y + 10;
}

/* ---------------------------------------------------------------- SVG series */

#define SVG_PLOT_LEFT 70
#define SVG_PLOT_HEIGHT 160
#define SVG_SERIES_HEIGHT (34 + SVG_PLOT_HEIGHT + 56)

static const char *const line_colours[] = {"#4e79a7", "#f28e2b", "#59a14f",
                                           "#e15759", "#76b7b2", "#b07aa1"};

static int in_series(const struct bench_result *m, const char *unit) {
  return m->series && strcmp(m->unit, unit) == 0;
}

/* The index of s in list[0..*n), added at the end when it is not there. */
static size_t distinct(const char **list, size_t *n, const char *s) {
  for (size_t i = 0; i < *n; i++)
    if (strcmp(list[i], s) == 0) return i;
  list[*n] = s;
  return (*n)++;
}

/* The points of a series in unit (a soak's windows), how many there are
 * along x: a line chart needs two. */
static size_t series_width(const struct bench_report *r, const char *unit) {
  const char **xs = cli_xmalloc((r->nresults ? r->nresults : 1) * sizeof *xs);
  size_t nx = 0;
  for (size_t i = 0; i < r->nresults; i++)
    if (in_series(&r->results[i], unit)) distinct(xs, &nx, r->results[i].variant);
  free(xs);
  return nx;
}

/* One line chart of the series points of unit, from y: the variants
 * along x in the order they came, a line per metric; returns the y below
 * it.  Nothing when there are fewer than two points along x. */
static int svg_series(FILE *f, const struct bench_report *r, const char *title,
                      const char *unit, int y) {
  size_t cap = r->nresults ? r->nresults : 1, nx = 0, nl = 0;
  const char **xs = cli_xmalloc(cap * sizeof *xs), **lines = cli_xmalloc(cap * sizeof *lines);
  double max = 0;
  for (size_t i = 0; i < r->nresults; i++) {
    const struct bench_result *m = &r->results[i];
    if (!in_series(m, unit)) continue;
    distinct(xs, &nx, m->variant);
    distinct(lines, &nl, m->metric);
    if (m->value > max) max = m->value;
  }
  if (nx >= 2) {
    const int x0 = SVG_PLOT_LEFT, x1 = SVG_WIDTH - 40;
    fprintf(f, "<text x=\"20\" y=\"%d\" font-size=\"16\" font-weight=\"bold\">", y + 20);
    xml_text(f, title);
    fputs("</text>\n", f);
    y += 34;
    const int bottom = y + SVG_PLOT_HEIGHT;
    if (max <= 0) max = 1;
    fprintf(f,
            "<polyline fill=\"none\" stroke=\"#999\" points=\"%d,%d %d,%d %d,%d\"/>\n"
            "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%.2f</text>\n"
            "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">0</text>\n",
            x0, y, x0, bottom, x1, bottom, x0 - 6, y + 10, max, x0 - 6, bottom);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">", x0, bottom + 16);
    xml_text(f, xs[0]);
    fprintf(f, "</text>\n<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">",
            x1, bottom + 16);
    xml_text(f, xs[nx - 1]);
    fputs("</text>\n", f);
    for (size_t l = 0; l < nl; l++) {
      const char *colour = line_colours[l % (sizeof line_colours / sizeof line_colours[0])];
      fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
              colour);
      for (size_t i = 0; i < r->nresults; i++) {
        const struct bench_result *m = &r->results[i];
        if (!in_series(m, unit) || strcmp(m->metric, lines[l]) != 0) continue;
        size_t at = distinct(xs, &nx, m->variant);
        fprintf(f, "%.1f,%.1f ", x0 + (double)at * (x1 - x0) / (double)(nx - 1),
                bottom - m->value / max * SVG_PLOT_HEIGHT);
      }
      int lx = x0 + (int)l * 170;
      fprintf(f,
              "\"/>\n<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>\n"
              "<text x=\"%d\" y=\"%d\" font-size=\"12\">",
              lx, bottom + 28, colour, lx + 16, bottom + 39);
      xml_text(f, lines[l]);
      fputs("</text>\n", f);
    }
    y = bottom + 56;
  }
  free(xs);
  free(lines);
  return y;
}

/* ---------------------------------------------------------------- SVG drawing */

/* The series drawn as lines under the bars. */
static const struct {
  const char *unit, *title;
} series_charts[] = {{"ms", "Claim time, every window (ms)"},
                     {"MiB", "Sizes at the end of every window (MiB)"}};

int bench_write_svg(FILE *f, const struct bench_config *cfg,
                    const struct bench_report *r) {
  size_t rows = 0;
  for (size_t i = 0; i < r->nresults; i++)
    rows += in_chart(&r->results[i], "jobs/s") || in_chart(&r->results[i], "ms");
  int height = 56 + 2 * 44 + (int)(rows + 2) * SVG_ROW + 20;
  for (size_t c = 0; c < sizeof series_charts / sizeof series_charts[0]; c++)
    if (series_width(r, series_charts[c].unit) >= 2) height += SVG_SERIES_HEIGHT;
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
          "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
          "<text x=\"20\" y=\"24\" font-size=\"18\">jobq bench on ",
          SVG_WIDTH, height, SVG_WIDTH, height);
  xml_text(f, store_name(cfg->store));
  char machine[1024];
  bench_machine_summary(&cfg->machine, machine, sizeof machine);
  fputs("</text>\n<text x=\"20\" y=\"42\" font-size=\"11\" fill=\"#555\">", f);
  xml_text(f, machine);
  fputs("</text>\n", f);
  int y = svg_chart(f, r, "Throughput (jobs/s)", "jobs/s", 52);
  y = svg_chart(f, r, "Latency from put to start (ms)", "ms", y);
  for (size_t c = 0; c < sizeof series_charts / sizeof series_charts[0]; c++)
    y = svg_series(f, r, series_charts[c].title, series_charts[c].unit, y);
  fputs("</svg>\n", f);
  return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}
