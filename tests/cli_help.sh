#!/usr/bin/env bash
# cli_help.sh - a command's help is written three times: its usage string
# (`jobq help CMD`, and `jobq CMD SUB --help` for each subcommand), its
# page (docs/commands/CMD.md) and its section of the manual (man/jobq.1).  This checks that they agree, for every command
# `jobq --help` lists: every option of the usage string is named on the
# page and in the manual's section (by its long or its short form; with
# the same short form in the page's table of options), and every option
# the page's table or the manual's section names is one the command (or
# the program, for the global options) takes.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

t_usage_page_and_manual_agree() {
  local cmds cmd
  cmds=$("$JOBQ" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }' |
         grep -vx help)
  [[ $(wc -w <<<"$cmds") -ge 10 ]] || fail "found only these commands in jobq --help: $cmds"
  local sub
  for cmd in $cmds; do
    "$JOBQ" help "$cmd" >"$D/$cmd.help" 2>&1 || fail "jobq help $cmd failed"
    # A command of subcommands (jobq cron add ...): their options too.
    for sub in $(grep -oE "^(usage|   or): jobq $cmd [a-z]+" "$D/$cmd.help" | awk '{ print $4 }' |
                 sort -u); do
      "$JOBQ" "$cmd" "$sub" --help >>"$D/$cmd.help" 2>&1 || fail "jobq $cmd $sub --help failed"
    done
  done
  python3 - "$ROOT" "$D" $cmds <<'EOF' || fail "the help, the pages and the manual disagree (above)"
import re, sys
root, d, cmds = sys.argv[1], sys.argv[2], sys.argv[3:]
man = open(root + "/man/jobq.1").read().split("\n")
errors = []

def options(text):
    """{long: short or None} of a help text's options: and global options: lists."""
    mine, glob, part = {}, {}, None
    for line in text.split("\n"):
        if line == "options:":
            part = mine
        elif line.startswith("global options"):
            part = glob
        elif part is not None:
            m = re.match(r"^  (?:-(\w), )?\s*--([a-z][a-z0-9-]*)", line)
            if m:
                part[m.group(2)] = m.group(1)
    return mine, glob

def man_section(cmd):
    """The text of the manual's sections whose title names `jobq CMD`."""
    out, on = [], False
    for line in man:
        if line.startswith(".SS ") or line.startswith(".SH "):
            on = line.startswith(".SS") and re.search(r"\bjobq %s\b" % re.escape(cmd), line) is not None
        elif on:
            out.append(line)
        if on and line.startswith(".SS"):
            out.append(line)
    return "\n".join(out)

for cmd in cmds:
    mine, glob = options(open("%s/%s.help" % (d, cmd)).read())
    known = set(mine) | set(glob)
    try:
        page = open("%s/docs/commands/%s.md" % (root, cmd)).read()
    except OSError:
        errors.append("%s: no docs/commands/%s.md" % (cmd, cmd))
        continue
    section = man_section(cmd)
    if not section:
        errors.append("%s: no section 'jobq %s' in man/jobq.1" % (cmd, cmd))
    section = section.replace("\\-", "-")
    section_opts = set(re.findall(r"(?<![\w-])--([a-z][a-z0-9-]*)", section))
    page_opts = set(re.findall(r"(?<![\w-])--([a-z][a-z0-9-]*)", page))

    def names(text, opts, opt, short):
        """Whether text names the option: --opt, or its short form -s."""
        return opt in opts or (short is not None and re.search(r"(?<![\w-])-%s\b" % short, text))

    rows = [l for l in page.split("\n") if re.match(r"^\| *`-", l)]
    row_opts = {}
    for row in rows:
        cell = row.split("|")[1]
        m = re.search(r"--([a-z][a-z0-9-]*)", cell)
        if m:
            s = re.match(r"^ *`-(\w)\b", cell)
            row_opts[m.group(1)] = s.group(1) if s and not cell.strip().startswith("`--") else None
    for opt, short in sorted(mine.items()):
        if not names(page, page_opts, opt, short):
            errors.append("%s: --%s is in the usage but not on docs/commands/%s.md" % (cmd, opt, cmd))
        elif opt in row_opts and row_opts[opt] != short:
            errors.append("%s: --%s is %s in the usage but %s on its page"
                          % (cmd, opt, "-" + short if short else "without a short form",
                             "-" + row_opts[opt] if row_opts[opt] else "without one"))
        if not names(section, section_opts, opt, short):
            errors.append("%s: --%s is in the usage but not in its section of man/jobq.1" % (cmd, opt))
    for opt in sorted(set(row_opts) - known):
        errors.append("%s: docs/commands/%s.md lists --%s, which it does not take" % (cmd, cmd, opt))
    for opt in sorted(section_opts - known):
        errors.append("%s: man/jobq.1 names --%s in its section, which it does not take" % (cmd, opt))
for e in errors:
    print("FAIL: " + e)
sys.exit(1 if errors else 0)
EOF
}

run_cases
