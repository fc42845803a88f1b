/*
 * banned.h - functions that must not be used in jobq (force-included by the
 * build).  Each has a bounded or reentrant replacement: snprintf for
 * sprintf, strtoll with checks for atoi, gmtime_r for gmtime, memcpy with
 * a known length for strcpy, strtok_r or plain scanning for strtok.
 */
#ifndef JOBQ_BANNED_H
#define JOBQ_BANNED_H

/* Declare the real functions first, so that the macros below only catch
 * uses in jobq's own code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JOBQ_BANNED(func) sorry_##func##_is_banned_in_jobq

#undef strcpy
#define strcpy(x, y) JOBQ_BANNED(strcpy)
#undef strcat
#define strcat(x, y) JOBQ_BANNED(strcat)
#undef sprintf
#define sprintf(...) JOBQ_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) JOBQ_BANNED(vsprintf)
#undef strtok
#define strtok(x, y) JOBQ_BANNED(strtok)
#undef atoi
#define atoi(x) JOBQ_BANNED(atoi)
#undef atol
#define atol(x) JOBQ_BANNED(atol)
#undef gmtime
#define gmtime(x) JOBQ_BANNED(gmtime)
#undef localtime
#define localtime(x) JOBQ_BANNED(localtime)

#endif
