/* api.h - what the library's other modules (the fleet and diff runs) take from the public API's
 * implementation (api.c). */
#ifndef HIERA_API_API_H
#define HIERA_API_API_H

#include "hiera.h"

/* The caller's hiera_options copied into this version's layout (fields its size does not cover
 * are zero), as hiera_new reads them: the one place that knows the struct's versions. src may be
 * NULL (all zero). The pointers are copied, not what they point to. */
void api_copy_options(hiera_options *dst, const hiera_options *src);
/* The same for a hiera_request. */
void api_copy_request(hiera_request *dst, const hiera_request *src);

#endif
