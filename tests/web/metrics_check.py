#!/usr/bin/python3
"""metrics_check.py - checks a Prometheus text exposition read from stdin.

The parse is prometheus_client's own (Debian's python3-prometheus-client),
which refuses a malformed line.  On top of it, the rules that
`promtool check metrics` applies and that a scrape depends on: every family
has HELP and TYPE once, before its samples; names and label names are
valid; counters end in _total; a histogram has cumulative buckets ending in
le="+Inf", equal to its _count, and a _sum; no series appears twice.
Prints one line per problem and exits 1 when there is any, else 0.
Run it with Debian's /usr/bin/python3, whose path has the package.
"""
import math
import re
import sys

from prometheus_client.parser import text_string_to_metric_families

NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def check(text):
    problems = []
    helped, typed, seen_samples = {}, {}, set()
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            if len(parts) < 4 or not NAME.match(parts[2]):
                problems.append(f"line {n}: malformed comment: {line!r}")
                continue
            book = helped if parts[1] == "HELP" else typed
            if parts[2] in book:
                problems.append(f"line {n}: second {parts[1]} for {parts[2]}")
            if parts[2] in seen_samples:
                problems.append(f"line {n}: {parts[1]} for {parts[2]} after its samples")
            book[parts[2]] = parts[3]
            if parts[1] == "TYPE" and parts[3] == "counter" and not parts[2].endswith("_total"):
                problems.append(f"line {n}: counter {parts[2]} does not end in _total")
        elif line and not line.startswith("#"):
            base = re.split(r"[{ ]", line, maxsplit=1)[0]
            for suffix in ("_bucket", "_count", "_sum"):
                if base.endswith(suffix) and base[: -len(suffix)] in typed:
                    base = base[: -len(suffix)]
            seen_samples.add(base)
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as e:  # the parser's own words
        return problems + [f"does not parse: {e}"]
    if not families:
        problems.append("no metrics at all")
    series = set()
    for f in families:
        # The parser names a counter's family without its _total.
        names = (f.name, f.name + "_total")
        if not any(n in helped for n in names):
            problems.append(f"{f.name}: no HELP")
        if not any(n in typed for n in names):
            problems.append(f"{f.name}: no TYPE")
        buckets = {}
        for s in f.samples:
            if not NAME.match(s.name):
                problems.append(f"{s.name}: not a valid metric name")
            for k in s.labels:
                if not LABEL.match(k) or k.startswith("__"):
                    problems.append(f"{s.name}: label {k!r} is not a valid label name")
            key = (s.name, tuple(sorted(s.labels.items())))
            if key in series:
                problems.append(f"{s.name}{dict(s.labels)}: the same series twice")
            series.add(key)
            if math.isnan(s.value) and f.type in ("counter", "histogram"):
                problems.append(f"{s.name}: NaN")
            if f.type in ("counter", "histogram") and s.value < 0:
                problems.append(f"{s.name}: negative value {s.value}")
            if f.type == "histogram":
                rest = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
                b = buckets.setdefault(rest, {"le": [], "count": None, "sum": None})
                if s.name.endswith("_bucket"):
                    b["le"].append((float(s.labels["le"]), s.value))
                elif s.name.endswith("_count"):
                    b["count"] = s.value
                elif s.name.endswith("_sum"):
                    b["sum"] = s.value
        for rest, b in buckets.items():
            where = f"{f.name}{dict(rest)}"
            les = sorted(b["le"])
            if not les or les[-1][0] != math.inf:
                problems.append(f"{where}: no le=\"+Inf\" bucket")
            if any(les[i][1] > les[i + 1][1] for i in range(len(les) - 1)):
                problems.append(f"{where}: buckets are not cumulative")
            if b["count"] is None or b["sum"] is None:
                problems.append(f"{where}: no _count or no _sum")
            elif les and les[-1][1] != b["count"]:
                problems.append(f"{where}: +Inf bucket {les[-1][1]} is not _count {b['count']}")
    return problems


def main():
    problems = check(sys.stdin.read())
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
