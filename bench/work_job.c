/*
 * work_job.c - the jobs bench/work.sh times `jobq work` with, doing as
 * little as a job can so that the foreman and the queue are all that is
 * measured.
 *
 *   work_job stamp               one job: prints the time it started
 *                                (Unix ns) as its result
 *   work_job persistent          a persistent worker (docs/worker-
 *                                protocol.md) answering every job
 *                                "done ID" at once
 *   work_job persistent-stamp    the same, with the time the job line
 *                                arrived (Unix ns) as the result
 *   work_job spawn N             for reference: how many times a second
 *                                this machine can start /bin/true and wait
 *                                for it (posix_spawn, one at a time), the
 *                                ceiling of one process per job
 */
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Standard base64 of a short text. */
static void b64(const char *in, char *out) {
  static const char a[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t n = strlen(in), o = 0, i = 0;
  for (; i + 2 < n; i += 3) {
    unsigned v = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8 |
                 (unsigned char)in[i + 2];
    out[o++] = a[v >> 18], out[o++] = a[(v >> 12) & 63];
    out[o++] = a[(v >> 6) & 63], out[o++] = a[v & 63];
  }
  if (i < n) {
    unsigned v = (unsigned char)in[i] << 16 |
                 (i + 1 < n ? (unsigned char)in[i + 1] << 8 : 0);
    out[o++] = a[v >> 18], out[o++] = a[(v >> 12) & 63];
    out[o++] = i + 1 < n ? a[(v >> 6) & 63] : '=';
    out[o++] = '=';
  }
  out[o] = '\0';
}

static int persistent(int stamp) {
  static char line[1 << 20];
  setvbuf(stdout, NULL, _IOFBF, 1 << 16);
  fputs("ready\n", stdout);
  fflush(stdout);
  while (fgets(line, sizeof line, stdin) != NULL) {
    int64_t t = now_ns();
    long long id;
    if (sscanf(line, "job %lld ", &id) != 1) return 1;
    if (stamp) {
      char text[32], enc[48];
      snprintf(text, sizeof text, "%lld", (long long)t);
      b64(text, enc);
      printf("done %lld %s\n", id, enc);
    } else {
      printf("done %lld\n", id);
    }
    fflush(stdout);
  }
  return 0;
}

static int spawn_rate(int n) {
  char *args[] = {"true", NULL};
  int64_t t0 = now_ns();
  for (int i = 0; i < n; i++) {
    pid_t pid;
    int status;
    if (posix_spawn(&pid, "/bin/true", NULL, NULL, args, environ) != 0) return 1;
    waitpid(pid, &status, 0);
  }
  double secs = (double)(now_ns() - t0) / 1e9;
  printf("%d spawns of /bin/true, one at a time: %.0f/s (%.2f ms each)\n", n,
         n / secs, secs * 1000 / n);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "spawn") == 0) return spawn_rate((int)strtol(argv[2], NULL, 10));
  if (argc == 2 && strcmp(argv[1], "stamp") == 0) {
    printf("%lld", (long long)now_ns());
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "persistent") == 0) return persistent(0);
  if (argc == 2 && strcmp(argv[1], "persistent-stamp") == 0) return persistent(1);
  fprintf(stderr, "usage: work_job stamp | persistent | persistent-stamp | spawn N\n");
  return 2;
}
