/* lazylib.h - libraries the hiera command opens on first use instead of linking them
 * (src/base/lazy/oniguruma.c, src/crypto/lazy/libcrypto.c; libhiera.a and .so link them as usual).
 *
 * The library never prints and never exits: when such a library cannot be opened (or lacks a
 * function), its loader records why here, once, and its functions then fail harmlessly (an
 * error code, NULL, nothing done). The library's code that needs the library asks first
 * (rregex_init, the eyaml functions) and returns the reason as an error; where no error can be
 * returned on the spot (a character class in a message, a literal pattern matched against
 * non-ASCII text), it marks the calling thread (diag_lib_missing) and the public call that
 * contains it fails with the reason instead of answering. */
#ifndef HIERA_LAZYLIB_H
#define HIERA_LAZYLIB_H

typedef enum {
    LAZYLIB_ONIG,   /* Oniguruma (libonig) */
    LAZYLIB_CRYPTO, /* OpenSSL's libcrypto */
    LAZYLIB_COUNT
} lazylib_id;

/* Records why the library cannot be used ("cannot load Oniguruma's libonig: <dlerror>"); the
 * first reason is kept (copied). Thread-safe. */
void lazylib_failed(lazylib_id id, const char *why);
/* Why the library cannot be used, or NULL: it is linked, loaded, or not asked for yet. The
 * text lives as long as the process. Thread-safe. */
const char *lazylib_failure(lazylib_id id);

#endif
