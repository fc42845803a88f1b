/*
 * version.c - what a program that loads libjobq at run time needs besides
 * the calls themselves: the version of the library it got, and the free()
 * that matches the library's own allocations (language bindings reach the
 * library through an FFI and cannot always name the same C library).
 */
#include <stdlib.h>

#include "internal.h"

const char *jobq_version(void) { return JOBQ_VERSION; }

void jobq_free(void *p) { free(p); }
