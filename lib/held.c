/*
 * held.c - the jobs a session holds: those its claims handed to its
 * worker that no acknowledgement has ended yet, by id, each with its
 * claim token, attempt, claim time, queue and ordering key.  One
 * open-addressed table serves the figures of acknowledgements and the
 * record of failed attempts (lib/tally.c), the locks of a batch of
 * completions taken before its statement (lib/ack.c), and the
 * reconciliation of what the database shows under the session after its
 * connection was made again (lib/session.c).
 *
 * A job that cannot be added for want of memory makes the table not
 * known any more (held_unknown): the session then no longer reconciles,
 * its figures count such jobs under queue '', and their completions go
 * the general way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static size_t slot_of(int64_t id, size_t cap) {
  uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ULL;
  return (size_t)(h >> 32) & (cap - 1);
}

/* Room for one more entry: 0 when out of memory. */
static int room(jobq_session *s) {
  if ((s->nheld + 1) * 4 <= s->capheld * 3) return 1;
  size_t cap = s->capheld ? s->capheld * 2 : 64;
  struct jobq_held_job *v = calloc(cap, sizeof *v);
  if (v == NULL) return 0;
  for (size_t i = 0; i < s->capheld; i++) {
    if (s->held[i].id == 0) continue;
    size_t k = slot_of(s->held[i].id, cap);
    while (v[k].id != 0) k = (k + 1) & (cap - 1);
    v[k] = s->held[i];
  }
  free(s->held);
  s->held = v;
  s->capheld = cap;
  return 1;
}

struct jobq_held_job *jobq__held_find(const jobq_session *s, int64_t id) {
  if (s->capheld == 0) return NULL;
  size_t k = slot_of(id, s->capheld);
  for (; s->held[k].id != 0; k = (k + 1) & (s->capheld - 1))
    if (s->held[k].id == id) return &s->held[k];
  return NULL;
}

void jobq__held_add(jobq_session *s, const jobq_job *jobs, size_t n) {
  for (size_t i = 0; i < n && !s->held_unknown; i++) {
    if (!room(s)) {
      s->held_unknown = 1;
      return;
    }
    /* A job claimed again (after a retry) keeps its entry, renewed. */
    size_t k = slot_of(jobs[i].id, s->capheld);
    while (s->held[k].id != 0 && s->held[k].id != jobs[i].id) k = (k + 1) & (s->capheld - 1);
    struct jobq_held_job *h = &s->held[k];
    char *key = NULL;
    if (jobs[i].key != NULL && (key = strdup(jobs[i].key)) == NULL) {
      s->held_unknown = 1;
      return;
    }
    if (h->id == 0) s->nheld++;
    else free(h->key);
    h->id = jobs[i].id;
    h->claimed_at = jobs[i].claimed_at_ms;
    h->attempt = jobs[i].attempt;
    memcpy(h->claim, jobs[i].claim, sizeof h->claim);
    snprintf(h->queue, sizeof h->queue, "%s", jobs[i].queue);
    h->key = key;
  }
}

void jobq__held_drop(jobq_session *s, int64_t id) {
  struct jobq_held_job *e = jobq__held_find(s, id);
  if (e == NULL) return;
  size_t mask = s->capheld - 1, hole = (size_t)(e - s->held);
  free(e->key);
  e->key = NULL;
  s->held[hole].id = 0;
  s->nheld--;
  /* The entries after the hole that their slot kept from theirs move
   * back: one may fill the hole when its home is not within (hole, k]. */
  for (size_t k = (hole + 1) & mask; s->held[k].id != 0; k = (k + 1) & mask) {
    size_t home = slot_of(s->held[k].id, s->capheld);
    if (((k - home) & mask) >= ((k - hole) & mask)) {
      s->held[hole] = s->held[k];
      s->held[k].id = 0;
      hole = k;
    }
  }
}

void jobq__held_release(jobq_session *s) {
  for (size_t i = 0; i < s->capheld; i++)
    if (s->held[i].id != 0) free(s->held[i].key);
  free(s->held);
  s->held = NULL;
  s->nheld = s->capheld = 0;
}
