#!/usr/bin/env bash
# worker.sh - a persistent jobq worker in bash, for
#
#   jobq work --persistent -c 4 -- examples/workers/worker.sh
#
# It speaks the line protocol of docs/worker-protocol.md: it writes "ready"
# once, then reads one "job" line at a time on stdin and answers each with
# one "done", "fail" or "retry" line on stdout.  Bytes travel as base64 (base64(1) of
# coreutils decodes and encodes them), so payloads and results may be any
# bytes; a shell variable cannot hold a NUL byte, so this worker keeps them
# in base64 and decodes them only into a pipe.  It exits when stdin ends,
# dropping a last line that has no newline (docs/worker-protocol.md).
#
# What it does with a payload is an example, and what the tests check:
#   fail...     fails, with the payload in the error
#   retry       asks to be retried in 100 ms on attempt 1, done on attempt 2
#   sleep:MS    sleeps MS milliseconds, then done
#   crash       exits with status 3 in the middle of the job
#   anything    done, with the payload as the result (an echo)
#
# Bash reads a pipe a byte at a time, so keep this one for small payloads;
# the Python and Node workers beside it read in blocks.
set -u
export LC_ALL=C

b64() { base64 -w0; }

echo ready

# One job line: job ID QUEUE ATTEMPT MAX_ATTEMPTS PREV_LOST CLAIM KEY PAYLOAD;
# later versions may add fields at the end (rest).  read fails on a last
# line without its newline, so such a line (the foreman died while writing
# it) is dropped, never run: it is not a whole job.
while IFS=' ' read -r verb id queue attempt max_attempts prev_lost claim key payload rest; do
  if [[ $verb != job ]]; then
    echo "worker.sh: expected a job line from the foreman, got '$verb'" >&2
    exit 1
  fi
  [[ $payload == - ]] && payload=""          # no bytes
  text=$(printf %s "$payload" | base64 -d 2>/dev/null | head -c 100 | tr -d '\0')
  case $text in
    fail*)
      printf 'fail %s %s\n' "$id" "$(printf 'failed on purpose: %s' "$text" | b64)" ;;
    retry)
      if [[ $attempt == 1 ]]; then
        printf 'retry %s 100 %s\n' "$id" "$(printf 'not yet' | b64)"
      else
        printf 'done %s %s\n' "$id" "$(printf 'retried' | b64)"
      fi ;;
    sleep:*)
      ms=${text#sleep:}
      sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
      printf 'done %s %s\n' "$id" "$(printf 'slept %s ms' "$ms" | b64)" ;;
    crash)
      echo "worker.sh: crashing on job $id on purpose" >&2
      exit 3 ;;
    *)
      printf 'done %s %s\n' "$id" "${payload:--}" ;;   # the payload, still base64
  esac
done
