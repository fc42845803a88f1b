/*
 * user.c - running jobs as another user: `jobq work --user USER`, for a
 * foreman that runs as root.  The user is looked up once, at the start
 * (its uid, its primary group, its supplementary groups as initgroups(3)
 * would set them, and its home), so that no job pays for a lookup in
 * /etc/passwd or a directory service.  Each job's exec helper
 * (jobq-exec.c) gets it as one argument, "-u UID:GID:GID,GID,...", and
 * switches to it in the child before exec.  A job that runs as another
 * user cannot read the foreman's memory, environment or files, nor
 * signal it; with the foreman non-dumpable (foreman.c), a job that runs
 * as the same user cannot read its environment or memory either.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fm.h"

#define MAX_GROUPS 1024

int fm_user_lookup(const char *name, struct fm_user *u, char *why,
                   size_t whysize) {
  memset(u, 0, sizeof *u);
  errno = 0;
  struct passwd *pw = getpwnam(name);
  if (pw == NULL && name[0] != '\0' && strspn(name, "0123456789") == strlen(name)) {
    errno = 0;
    pw = getpwuid((uid_t)strtoul(name, NULL, 10));
  }
  if (pw == NULL) {
    if (errno != 0)
      snprintf(why, whysize, "cannot look it up: %s", fm_strerror(errno));
    else
      snprintf(why, whysize, "no such user");
    return -1;
  }
  gid_t groups[MAX_GROUPS];
  int n = MAX_GROUPS;
  if (getgrouplist(pw->pw_name, pw->pw_gid, groups, &n) < 0) {
    snprintf(why, whysize, "the user is in more than %d groups", MAX_GROUPS);
    return -1;
  }
  u->name = fm_xstrdup(pw->pw_name);
  u->home = fm_xstrdup(pw->pw_dir != NULL ? pw->pw_dir : "/");
  u->uid = pw->pw_uid;
  u->gid = pw->pw_gid;
  /* "UID:GID:GID,GID,..." for the exec helper. */
  size_t size = 48 + (size_t)n * 12;
  u->arg = fm_xmalloc(size);
  size_t o = (size_t)snprintf(u->arg, size, "%lu:%lu:", (unsigned long)u->uid,
                              (unsigned long)u->gid);
  for (int i = 0; i < n; i++)
    o += (size_t)snprintf(u->arg + o, size - o, "%s%lu", i ? "," : "",
                          (unsigned long)groups[i]);
  return 0;
}

void fm_user_release(struct fm_user *u) {
  free(u->name);
  free(u->home);
  free(u->arg);
  memset(u, 0, sizeof *u);
}
