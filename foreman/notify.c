/*
 * notify.c - the foreman under systemd (Type=notify): READY=1 once its
 * session is open, STATUS= with what it is doing, STOPPING=1 when it
 * begins to stop, and WATCHDOG=1 from the event loop when the unit sets
 * WatchdogSec (a loop that hangs stops the pings, and systemd restarts
 * the foreman).  Through libsystemd's sd_notify; nothing at all when
 * NOTIFY_SOCKET is not set.
 */
#include <stdio.h>
#include <stdlib.h>

#include <systemd/sd-daemon.h>

#include "fm.h"

/* How often STATUS= is refreshed when no watchdog asks for more. */
#define STATUS_EVERY_MS 5000

static void send_status(struct fm *fm, const char *extra) {
  char line[512];
  snprintf(line, sizeof line,
           "%sSTATUS=%s: %zu running, %zu claimed; %lld done, %lld failed, %lld lost",
           extra, fm->stopping ? "stopping" : fm->connected ? "claiming" : "connecting",
           fm->running.n, fm->waiting.n, (long long)fm->done, (long long)fm->failed,
           (long long)fm->lost);
  sd_notify(0, line);
}

static int watchdog;

static void on_timer(uv_timer_t *t) {
  struct fm *fm = t->data;
  send_status(fm, watchdog ? "WATCHDOG=1\n" : "");
}

void fm_notify_start(struct fm *fm) {
  if (getenv("NOTIFY_SOCKET") == NULL) return;
  uint64_t usec = 0;
  watchdog = sd_watchdog_enabled(0, &usec) > 0 && usec > 0;
  /* Twice per watchdog period, as systemd advises. */
  uint64_t every = watchdog ? usec / 2000 : STATUS_EVERY_MS;
  if (watchdog && every > STATUS_EVERY_MS) every = STATUS_EVERY_MS;
  if (every == 0) every = 1;
  fm->notify_timer = fm_xmalloc(sizeof *fm->notify_timer);
  uv_timer_init(fm->loop, fm->notify_timer);
  fm->notify_timer->data = fm;
  uv_timer_start(fm->notify_timer, on_timer, 0, every);
}

void fm_notify_ready(struct fm *fm, const char *session_id) {
  if (fm->notify_timer == NULL) return;
  sd_notifyf(0, "READY=1\nSTATUS=claiming: session %s open", session_id);
}

void fm_notify_stopping(struct fm *fm) {
  if (fm->notify_timer == NULL) return;
  send_status(fm, "STOPPING=1\n");
}

static void on_closed(uv_handle_t *h) { free(h); }

void fm_notify_close(struct fm *fm) {
  if (fm->notify_timer == NULL) return;
  uv_close((uv_handle_t *)fm->notify_timer, on_closed);
  fm->notify_timer = NULL;
}
