#!/usr/bin/env bash
# cli_completion.sh - the bash completion (completions/jobq.bash) as bash
# runs it: registered for jobq (complete -p), and what it offers for a
# line: commands, global and per-command options (the command's --help),
# cron subcommands, job states, time zones, queue and schedule names from
# the database named by JOBQ_DB or by --db on the line, and nothing, at
# once and without a word, when the database is not there.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"

COMPLETION=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/completions/jobq.bash

# offers LINE: what the completion offers for LINE (the last word is the
# one being completed; end LINE with a space for a new word), one a line,
# into $T_OUT; its stderr into $T_ERR.
offers() {
  T_OUT=$D/out.$RANDOM
  T_ERR=$D/err.$RANDOM
  mkdir -p "$D/bin"
  ln -sf "$(realpath "$JOBQ")" "$D/bin/jobq"
  PATH=$D/bin:$PATH JOBQ_DB=${T_DBURL:-sqlite:$DB} bash -c '
    source "$1"
    line=$2
    read -r -a COMP_WORDS <<<"$line"
    [[ $line == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMP_LINE=$line
    COMP_POINT=${#line}
    _jobq
    printf "%s\n" "${COMPREPLY[@]}"' completion "$COMPLETION" "$1" >"$T_OUT" 2>"$T_ERR"
}

# expect_offer WORD...: each is offered.
expect_offer() {
  local w
  for w in "$@"; do
    grep -qxF -- "$w" "$T_OUT" || fail "'$w' not offered: $(tr '\n' ' ' <"$T_OUT")"
  done
}

expect_no_offer() {
  [[ ! -s $T_OUT || $(tr -d '\n' <"$T_OUT") == "" ]] || fail "offered: $(tr '\n' ' ' <"$T_OUT")"
}

t_registered() {
  local out
  out=$(bash -c 'source "$1"; complete -p jobq' x "$COMPLETION")
  [[ $out == "complete -F _jobq jobq" ]] || fail "complete -p: $out"
}

t_commands_and_options() {
  offers "jobq cr"
  expect_offer cron
  offers "jobq "
  expect_offer put work cron purge cancel prune help
  offers "jobq --j"
  expect_offer --json
  offers "jobq cancel --q"
  expect_offer --queue --quiet
  offers "jobq prune --"
  expect_offer --older-than --queue --dry-run --quiet --db
  offers "jobq cron r"
  expect_offer rm resume run
  offers "jobq cron add nightly --sk"
  expect_offer --skip-missed
  offers "jobq cron add nightly @d"
  expect_offer @daily
  offers "jobq ls --state s"
  expect_offer scheduled
  offers "jobq cron add x @daily --tz Europe/Be"
  expect_offer Europe/Berlin
  offers "jobq help pu"
  expect_offer purge put
  [[ -s $T_ERR ]] && fail "stderr: $(head -c 200 "$T_ERR")"
  return 0
}

t_names_from_the_database() {
  run put -q alpha x
  run put -q beta y
  run cron add nightly @daily -q alpha
  offers "jobq pause "
  expect_offer alpha beta
  offers "jobq ls -q b"
  expect_offer beta
  offers "jobq purge --dry-run a"
  expect_offer alpha
  offers "jobq cron rm "
  expect_offer nightly
  offers "jobq policy alpha "
  expect_offer block skip
  # A value of an option is not a command's argument.
  offers "jobq --db sqlite:$DB pause "
  expect_offer alpha
  # --db on the line names the database the names come from.
  local other=$D/other.db
  JOBQ_DB=sqlite:$other "$JOBQ" put -q gamma z >/dev/null
  offers "jobq --db sqlite:$other resume "
  expect_offer gamma
  grep -qx alpha "$T_OUT" && fail "names from JOBQ_DB, not --db"
  return 0
}

t_silent_without_a_database() {
  T_DBURL=sqlite:$D/none/nothing.db
  local start=$SECONDS
  offers "jobq pause "
  expect_no_offer
  [[ -s $T_ERR ]] && fail "stderr: $(head -c 200 "$T_ERR")"
  T_DBURL=postgres://nobody@127.0.0.1:1/none
  offers "jobq ls -q "
  expect_no_offer
  [[ -s $T_ERR ]] && fail "stderr: $(head -c 200 "$T_ERR")"
  ((SECONDS - start < 10)) || fail "took $((SECONDS - start))s"
  [[ -e $D/none/nothing.db ]] && fail "completion made a database"
  return 0
}

run_cases
