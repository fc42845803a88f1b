/*
 * fuzz_redact.c - libFuzzer target for the redaction of database URLs.
 * The input is a password of any bytes (its first byte picks a form);
 * it goes into one of the places a URL can carry a password: the user
 * part of each store's URL (with a host list, or none), PostgreSQL's
 * password options, the keyword/value form, quoted or not.  Whatever the
 * password holds ('/', '?', '@', '#', '&', quotes, spaces) and however
 * badly the URL then parses, no byte of it may be left in the redacted
 * URL, nor in the message of a URL that the parser refuses.
 *
 * The rest of each URL is written with lower-case letters, digits and a
 * little punctuation only (the skeleton), so that any other byte of the
 * output can only have come from the password: the test is on those
 * bytes, which the fuzzer puts in as it likes.  The parser's messages
 * are fixed English with a few upper-case letters and punctuation of
 * their own: in a message, letters, digits and those are not tested.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const forms[][2] = {
    {"postgres://user:", "@host.example:5432/db?schema=s"},
    {"postgresql://user:", "@h1:5432,h2:5433/db"},
    {"mysql://user:", "@db.local:3306/jobs?connect_timeout=10"},
    {"mariadb://user:", "@/jobs"},
    {"postgres://:", "@/db"},
    {"postgres://h/db?sslmode=require&password=", ""},
    {"postgres://h/db?password=", "&schema=s"},
    {"postgres://h/db?%70assword=", "&schema=s"},
    {"mysql://u@h/db?password=", "&x=1"},
    {"host=/run/postgresql password=", " dbname=db"},
    {"host=h dbname=db sslpassword=", ""},
    {"password = ", " host=h"},
    {"host=h password='", "' dbname=db"},
};
#define NFORMS (sizeof forms / sizeof forms[0])

/* Bytes the output may hold without coming from the password. */
static int skeleton[256], wording[256];

static void learn(int *set, const char *s) {
  for (; *s; s++) set[(unsigned char)*s] = 1;
}

static void init(void) {
  for (size_t i = 0; i < NFORMS; i++) {
    learn(skeleton, forms[i][0]);
    learn(skeleton, forms[i][1]);
  }
  learn(skeleton, "*");
  memcpy(wording, skeleton, sizeof wording);
  for (int c = 0; c < 256; c++)
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
      wording[c] = 1;
  learn(wording, "'%:;,.()[]# -_/?@&=");
}

/* Aborts when out holds a byte of the password that set does not allow. */
static void check(const char *out, const char *pw, size_t len, const int *set) {
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)pw[i];
    if (!set[c] && strchr(out, c) != NULL) abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  if (!ready) {
    init();
    ready = 1;
  }
  if (size < 1) return 0;
  const char *pre = forms[data[0] % NFORMS][0], *post = forms[data[0] % NFORMS][1];
  size_t len = size - 1;
  char *pw = malloc(len + 1);
  size_t plen = strlen(pre), qlen = strlen(post);
  char *url = malloc(plen + len + qlen + 1);
  if (pw == NULL || url == NULL) {
    free(pw);
    free(url);
    return 0;
  }
  /* A NUL would end the URL: the password is the bytes before one. */
  memcpy(pw, data + 1, len);
  pw[len] = '\0';
  len = strlen(pw);
  memcpy(url, pre, plen);
  memcpy(url + plen, pw, len);
  memcpy(url + plen + len, post, qlen + 1);

  char *red = jobq_url_redact(url);
  if (red != NULL) check(red, pw, len, skeleton);
  free(red);

  jobq *db = calloc(1, sizeof *db);
  if (db != NULL) {
    jobq_url u;
    if (jobq__url_parse(db, url, &u) == JOBQ_OK)
      jobq__url_release(&u);
    else
      check(db->errmsg, pw, len, wording);
    free(db);
  }
  free(pw);
  free(url);
  return 0;
}
