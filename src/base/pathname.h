/* pathname.h - Ruby's Pathname arithmetic, which decides the paths Hiera reads and prints. */
#ifndef HIERA_PATHNAME_H
#define HIERA_PATHNAME_H

/* Ruby's Pathname(base) + rel (Pathname#plus): an absolute rel wins; leading "." and ".."
 * components of rel are resolved against base lexically, the rest is kept as written.
 * Returns a malloc'ed string. */
char *pn_plus(const char *base, const char *rel);
/* Ruby's File.dirname / Pathname#parent for the paths we handle. malloc'ed. */
char *pn_dirname(const char *path);
/* Ruby's File.basename(path). malloc'ed. */
char *pn_basename(const char *path);

#endif
