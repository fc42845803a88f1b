#!/usr/bin/env bash
# job.sh - the job of the chaos runs (tests/chaos/chaos.py): it appends
# "S ID ATTEMPT CLAIM START_NS FOREMAN_PID PID KIND" to $CHAOS_LOG when it starts and
# "E ID ATTEMPT CLAIM END_NS" when it ends, and completes with its claim
# token as the result, so that the checker can tell which run's completion
# counted.  The payload says how to behave: "ok-..." ends at once,
# "slow-..." runs 0.2 to 1 s (so that kills catch it running), "long-..."
# 3 s (the last fault's), "fail-..." exits 3 (it ends dead).  Lines are appended in one write each (O_APPEND),
# so runs on many machines' processes never tear each other's lines.
# A foreman may run under faketime: the log takes the true time (see
# below).
# Builtins only (no date, no cat): a job costs one process.  A job of a
# foreman under faketime runs again without it first, since the faked
# clock is already in this shell.
if [[ -n ${FAKETIME:-} ]]; then
  exec env -u LD_PRELOAD -u FAKETIME -u FAKETIME_DONT_FAKE_MONOTONIC bash "$0" "$@"
fi
now_ns() { local t=${EPOCHREALTIME/[.,]/}; REPLY=${t}000; }
# The foreman, and the process that a kill of this job hits: in a cgroup
# the exec helper (jobq-exec) stays as the job's parent and the foreman
# is its parent; else the foreman is the parent.
foreman=$PPID pid=$$
read -r stat </proc/$PPID/stat || stat=
if [[ $stat == *"(jobq-exec) "* ]]; then
  read -r _ ppid _ <<<"${stat##*) }"
  foreman=$ppid pid=$PPID
fi
IFS= read -r -d '' payload || true
now_ns
printf 'S %s %s %s %s %s %s %s\n' "$JOBQ_JOB_ID" "$JOBQ_ATTEMPT" "$JOBQ_CLAIM" \
  "$REPLY" "$foreman" "$pid" "${payload%%-*}" >>"$CHAOS_LOG"
case $payload in
  slow-*) sleep "0.$((2 + RANDOM % 8))" ;;
  long-*) sleep 3 ;;
esac
now_ns
printf 'E %s %s %s %s\n' "$JOBQ_JOB_ID" "$JOBQ_ATTEMPT" "$JOBQ_CLAIM" \
  "$REPLY" >>"$CHAOS_LOG"
case $payload in
  fail-*) exit 3 ;;
esac
printf '%s' "$JOBQ_CLAIM"
