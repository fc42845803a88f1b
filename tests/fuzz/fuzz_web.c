/*
 * fuzz_web.c - libFuzzer target for the Host check of `jobq web`: a
 * Host header that passes must name the server exactly (up to case),
 * its address, localhost or an allowed host, with the listening port or
 * an allowed host's own; anything longer, shorter or between is refused.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../web/web.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *host = malloc(size + 1);
  if (host == NULL) return 0;
  memcpy(host, data, size);
  host[size] = '\0';
  struct web_options o;
  memset(&o, 0, sizeof o);
  snprintf(o.host, sizeof o.host, "127.0.0.1");
  o.port = 8080;
  o.loopback = 1;
  o.allow_hosts[0] = "jobq.example.com";
  o.allow_hosts[1] = "proxy.example:443";
  o.nallow_hosts = 2;
  static const char *const exact[] = {"127.0.0.1:8080", "localhost:8080",
                                      "jobq.example.com:8080", "proxy.example:443"};
  int want = 0;
  for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
    want |= strcasecmp(host, exact[i]) == 0;
  if (web_host_allowed(&o, 8080, host) != want) abort();
  free(host);
  return 0;
}
