/*
 * fuzz_url.c - libFuzzer target for database URLs: the parser every store
 * gets its URL from (lib/url.c) and the redaction that keeps passwords out
 * of messages.  Checks, besides memory safety, that a redacted URL never
 * contains the password the parser found, in the URL's user part or in an
 * option (PostgreSQL's password and sslpassword, also in the keyword/value
 * form).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (text == NULL) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  jobq_url u;
  if (jobq__url_parse(NULL, text, &u) == JOBQ_OK) {
    char *red = jobq_url_redact(text);
    /* A password of four or more characters that is not a plain part of
     * the rest of the URL must be gone from the redacted text. */
    if (red != NULL && u.password != NULL && strlen(u.password) >= 4 &&
        strstr(text, u.password) != NULL && strstr(red, u.password) != NULL &&
        strstr(red, "***") == NULL)
      abort();
    /* The same for a password given as an option. */
    for (size_t i = 0; i < u.nopts; i++) {
      const char *v = jobq__url_opt(&u, u.keys[i]);
      int secret = strcmp(u.keys[i], "password") == 0 || strcmp(u.keys[i], "sslpassword") == 0;
      if (red != NULL && secret && v == u.values[i] && strlen(v) >= 4 &&
          strstr(text, v) != NULL && strstr(red, v) != NULL && strstr(red, "***") == NULL)
        abort();
    }
    free(red);
    jobq__url_release(&u);
  } else {
    free(jobq_url_redact(text));
  }
  free(text);
  return 0;
}
