/*
 * test_watch.c - wake-ups: jobq_watch()'s descriptor turns readable when
 * another connection commits, jobq_changed() reports each change once, and
 * a handle's own commits do not wake it unless they made a job ready, a handle that watches some queues
 * hears of no other (where the store can tell), and a resumed queue wakes.  The MariaDB/MySQL
 * store has no
 * wake-ups (workers poll): there, jobq_watch() must say so.
 */
#include "helpers.h"

#include <poll.h>

/* Whether fd turns readable within ms. */
static int readable(int fd, int ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* Skips, saying why, on a store that cannot watch, after checking that it
 * refuses to. */
static void skip_unless_watching(tq *t) {
  if (!th_is_mysql()) return;
  int fd = 7;
  assert_rc(jobq_watch(t->db, &fd), JOBQ_ENOTSUP);
  assert_int_equal(fd, -1);
  th_assert_msg(t->db, "poll");
  /* Without wake-ups every call may have news. */
  assert_int_equal(jobq_changed(t->db), 1);
  print_message("skipped on mysql: the store has no wake-ups (workers poll); "
                "checked that jobq_watch says so\n");
  skip();
}

static void test_other_commit_wakes(void **state) {
  tq *t = *state;
  skip_unless_watching(t);
  int fd = -1;
  assert_rc(jobq_watch(t->db, &fd), JOBQ_OK);
  assert_true(fd >= 0);
  assert_int_equal(jobq_changed(t->db), 0);
  assert_false(readable(fd, 50));

  jobq *other = th_open(t->url);
  th_put(other, "q", "x");
  assert_true(readable(fd, 2000));
  assert_int_equal(jobq_changed(t->db), 1);
  /* Drained: one change is reported once. */
  assert_false(readable(fd, 50));
  assert_int_equal(jobq_changed(t->db), 0);

  /* A second watch call returns the same descriptor. */
  int fd2 = -1;
  assert_rc(jobq_watch(t->db, &fd2), JOBQ_OK);
  assert_int_equal(fd2, fd);
  jobq_close(other);
}

static void test_own_commit_is_no_change(void **state) {
  tq *t = *state;
  skip_unless_watching(t);
  int fd = -1;
  assert_rc(jobq_watch(t->db, &fd), JOBQ_OK);
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "q";
  o.delay_ms = 60000;
  th_put_opts(t->db, &o);
  /* The log was written, so the descriptor may wake, but nothing changed
   * that this handle did not do itself, and nothing is ready. */
  assert_int_equal(jobq_changed(t->db), 0);
  jobq *other = th_open(t->url);
  th_put(other, "p", "theirs");
  /* Another's commit is a change.  The descriptor may wake first for the
   * delayed put's own notification (PostgreSQL delivers it to the
   * handle's listening connection, and the handle leaves it out), so
   * look until the other's comes. */
  int changed = 0;
  for (int64_t end = th_mono_ms() + 2000; !changed && th_mono_ms() < end;)
    if (readable(fd, 100)) changed = jobq_changed(t->db);
  assert_int_equal(changed, 1);
  /* Nor are its claim, its session's heartbeat and an outcome that makes
   * no job ready. */
  jobq_session *s = th_session(t->db, 5000);
  jobq_job *j = th_claim_one(s, "p");
  assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_OK);
  th_complete_many(s, j, 1);
  assert_int_equal(jobq_changed(t->db), 0);
  jobq_close(other);
  jobq_session_close(s);
}

/* A commit of the handle's own that makes a job ready is work for it: the
 * next job of an ordering key that its ack let go, a job it put. */
static void test_own_ready_job_is_a_change(void **state) {
  tq *t = *state;
  skip_unless_watching(t);
  int fd = -1;
  assert_rc(jobq_watch(t->db, &fd), JOBQ_OK);
  th_put(t->db, "q", "mine");
  assert_int_equal(jobq_changed(t->db), 1);
  assert_int_equal(jobq_changed(t->db), 0);
  th_put_key(t->db, "keyed", "k");
  th_put_key(t->db, "keyed", "k");
  assert_int_equal(jobq_changed(t->db), 1);
  jobq_session *s = th_session(t->db, 5000);
  jobq_job *j = th_claim_one(s, "keyed");
  assert_int_equal(jobq_changed(t->db), 0);
  th_complete_many(s, j, 1);
  assert_int_equal(jobq_changed(t->db), 1);
  assert_int_equal(jobq_changed(t->db), 0);
  /* Rolled back: nothing was made ready. */
  assert_rc(jobq_begin(t->db), JOBQ_OK);
  th_put(t->db, "q", "gone");
  assert_rc(jobq_rollback(t->db), JOBQ_OK);
  assert_int_equal(jobq_changed(t->db), 0);
  jobq_session_close(s);
}

static void test_only_watched_queues(void **state) {
  tq *t = *state;
  skip_unless_watching(t);
  int fd = -1;
  assert_rc(jobq_watch(t->db, &fd), JOBQ_OK);
  const char *const mine[] = {"mine", "also.mine"};
  if (th_is_sqlite()) {
    /* Any commit wakes every watcher: it cannot tell whose. */
    assert_rc(jobq_watch_queues(t->db, mine, 2), JOBQ_ENOTSUP);
    th_assert_msg(t->db, "every commit wakes");
    print_message("skipped on sqlite: its wake-ups do not name their queue; checked "
                  "that jobq_watch_queues says so\n");
    skip();
  }
  assert_rc(jobq_watch_queues(t->db, mine, 2), JOBQ_OK);
  /* A bad name is refused, and the filter stays as it was. */
  const char *const bad[] = {"mine", "Not A Queue"};
  assert_rc(jobq_watch_queues(t->db, bad, 2), JOBQ_EINVAL);
  th_assert_msg(t->db, "Not A Queue");
  assert_int_equal(jobq_changed(t->db), 0);

  jobq *other = th_open(t->url);
  th_put(other, "theirs", "x");
  assert_true(readable(fd, 2000));
  assert_int_equal(jobq_changed(t->db), 0);
  th_put(other, "also.mine", "x");
  assert_true(readable(fd, 2000));
  assert_int_equal(jobq_changed(t->db), 1);

  /* No queues: every queue again. */
  assert_rc(jobq_watch_queues(t->db, NULL, 0), JOBQ_OK);
  th_put(other, "theirs", "y");
  assert_true(readable(fd, 2000));
  assert_int_equal(jobq_changed(t->db), 1);
  jobq_close(other);
}

static void test_resume_wakes(void **state) {
  tq *t = *state;
  skip_unless_watching(t);
  int fd = -1;
  assert_rc(jobq_watch(t->db, &fd), JOBQ_OK);
  jobq *other = th_open(t->url);
  assert_rc(jobq_pause(other, "paused"), JOBQ_OK);
  th_put(other, "paused", "x");
  assert_true(readable(fd, 2000));
  jobq_changed(t->db);
  assert_false(readable(fd, 50));
  /* Its job becomes work when the queue is resumed: a wake-up says so. */
  assert_rc(jobq_resume(other, "paused"), JOBQ_OK);
  assert_true(readable(fd, 2000));
  assert_int_equal(jobq_changed(t->db), 1);
  jobq_close(other);
}

/* A delayed job wakes a watcher too, and jobq_next_due() says when it
 * comes due, so that the watcher may sleep until then. */
static void test_next_due(void **state) {
  tq *t = *state;
  int64_t in = 7;
  assert_rc(jobq_next_due(t->db, NULL, 0, &in), JOBQ_OK);
  assert_int_equal(in, -1);
  const char *mine[] = {"later", "none"};
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "later";
  o.delay_ms = 60000;
  int fd = -1;
  int watching = jobq_watch(t->db, &fd) == JOBQ_OK;
  jobq *other = th_open(t->url);
  th_put_opts(other, &o);
  if (watching) {
    assert_true(readable(fd, 2000));
    assert_int_equal(jobq_changed(t->db), 1);
  }
  assert_rc(jobq_next_due(t->db, mine, 2, &in), JOBQ_OK);
  assert_true(in > 50000 && in <= 60000);
  assert_rc(jobq_next_due(t->db, NULL, 0, &in), JOBQ_OK);
  assert_true(in > 50000 && in <= 60000);
  assert_rc(jobq_next_due(t->db, mine + 1, 1, &in), JOBQ_OK);
  assert_int_equal(in, -1);
  /* One due now: 0. */
  th_put(other, "later", "now");
  assert_rc(jobq_next_due(t->db, mine, 2, &in), JOBQ_OK);
  assert_int_equal(in, 0);
  const char *bad[] = {"Bad Name"};
  assert_rc(jobq_next_due(t->db, bad, 1, &in), JOBQ_EINVAL);
  assert_rc(jobq_next_due(t->db, NULL, 0, NULL), JOBQ_EINVAL);
  jobq_close(other);
}

static void test_bad_handle(void **state) {
  (void)state;
  int fd = 7;
  assert_rc(jobq_watch(NULL, &fd), JOBQ_EINVAL);
  assert_int_equal(fd, -1);
  assert_rc(jobq_changed(NULL), JOBQ_EINVAL);
  assert_rc(jobq_watch_queues(NULL, NULL, 0), JOBQ_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TQ_TEST(test_other_commit_wakes),
      TQ_TEST(test_own_commit_is_no_change),
      TQ_TEST(test_own_ready_job_is_a_change),
      TQ_TEST(test_only_watched_queues),
      TQ_TEST(test_resume_wakes),
      TQ_TEST(test_next_due),
      TQ_TEST(test_bad_handle),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
