/* result.h - the three outcomes of every step of a lookup, kept apart everywhere: found (even a
 * found undef), not found, and error (with an herr). */
#ifndef HIERA_ENGINE_RESULT_H
#define HIERA_ENGINE_RESULT_H

typedef enum { LR_FOUND = 0, LR_NOT_FOUND = 1, LR_ERROR = 2 } lr;

#endif
