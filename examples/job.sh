#!/usr/bin/env bash
# job.sh - a job for `jobq work`, run once per job:
#
#   jobq work -q reports -c 4 -- examples/job.sh
#
# The payload comes on stdin; the job's id, queue, attempt and key in the
# environment (docs/worker-contract.md).  What it writes on stdout is the
# result; exit status 0 is done, 75 retry later, anything else failed, with
# the end of stderr as the error.  `make demo` runs it.  The payloads it
# knows:
#
#   sleep:MS     sleeps MS milliseconds, then done
#   fail         fails every time (dead once its attempts are spent)
#   fail-once    fails on attempt 1, done on attempt 2
#   hang         never ends: its timeout stops it
#   anything     done, with "len=N" as the result
#
# With DEMO_LOG set, it appends one line per run before it does the work:
# "id queue key attempt payload", tab-separated.
set -u
payload=$(cat)
if [[ -n ${DEMO_LOG:-} ]]; then
  printf '%s\t%s\t%s\t%s\t%s\n' "$JOBQ_JOB_ID" "$JOBQ_QUEUE" "${JOBQ_KEY:--}" \
    "$JOBQ_ATTEMPT" "$payload" >>"$DEMO_LOG"
fi
case $payload in
  sleep:*)
    ms=${payload#sleep:}
    sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
    echo "slept $ms ms" ;;
  fail)
    echo "failed on purpose (attempt $JOBQ_ATTEMPT of $JOBQ_MAX_ATTEMPTS)" >&2
    exit 1 ;;
  fail-once)
    if [[ $JOBQ_ATTEMPT == 1 ]]; then
      echo "failed on purpose, once" >&2
      exit 1
    fi
    echo "done on attempt $JOBQ_ATTEMPT" ;;
  hang)
    exec sleep 3600 ;;
  *)
    echo "len=${#payload}" ;;
esac
