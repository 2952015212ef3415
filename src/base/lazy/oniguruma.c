/* oniguruma.c - Oniguruma for the hiera command, loaded when a regexp first needs it.
 *
 * Loading libonig (600 KB, its relocations and start-up) was part of every one-shot `hiera
 * lookup`, which mostly matches only plain lookup_options patterns (rregex.c matches those
 * itself). The command is therefore linked without -lonig: this file defines the Oniguruma
 * functions the library calls, each of which opens libonig.so.5 with dlopen on first use and
 * calls the real function (as src/crypto/lazy/libcrypto.c does for libcrypto). The prototypes
 * come from Oniguruma's header, so the compiler checks every signature.
 *
 * The library also names two of Oniguruma's data objects, the UTF-8 encoding and the Ruby
 * syntax (ONIG_ENCODING_UTF8, ONIG_SYNTAX_RUBY are their addresses). They are defined here as
 * copies of libonig's, made when it is loaded (every user of Oniguruma calls rregex_init, which
 * calls onig_initialize, before it uses them), and the functions below pass libonig its own
 * objects in their place: Oniguruma compares encodings by address. libhiera.a and .so link
 * libonig as usual; only the hiera executable links this file.
 *
 * When libonig cannot be opened (or lacks a function), nothing is printed and the process goes
 * on: the reason (with dlerror's text) is recorded once (lazylib_failed), every function below
 * then fails as Oniguruma fails (an error code, NULL, nothing done), and rregex_init tells its
 * callers, which return the reason as an error (base/lazylib.h). */
#include <oniguruma.h>

#include "base/lazylib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

OnigEncodingType OnigEncodingUTF8;
OnigSyntaxType OnigSyntaxRuby;

static void *onig_handle; /* NULL: libonig could not be opened (lazylib_failure says why) */
static OnigEncoding real_utf8;
static OnigSyntaxType *real_ruby;
static pthread_once_t onig_load_once = PTHREAD_ONCE_INIT;

/* the error code the functions return when libonig is missing (rregex_init reports the reason) */
#define MISSING ONIGERR_INVALID_ARGUMENT

static void *sym_in(void *h, const char *name)
{
    void *f = dlsym(h, name);
    if (!f) {
        char why[256];
        snprintf(why, sizeof why, "cannot use Oniguruma's libonig: it has no %s", name);
        lazylib_failed(LAZYLIB_ONIG, why);
    }
    return f;
}

static void onig_open(void)
{
    char why[1024];
    void *h = dlopen("libonig.so.5", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        /* (the reason is the first attempt's: libonig.so is only the development package's) */
        const char *e = dlerror();
        snprintf(why, sizeof why, "cannot load Oniguruma's libonig (libonig.so.5, Debian package libonig5): %s",
                 e ? e : "unknown error");
        h = dlopen("libonig.so", RTLD_NOW | RTLD_LOCAL);
    }
    if (!h) {
        lazylib_failed(LAZYLIB_ONIG, why);
        return;
    }
    real_utf8 = sym_in(h, "OnigEncodingUTF8");
    real_ruby = sym_in(h, "OnigSyntaxRuby");
    if (!real_utf8 || !real_ruby)
        return;
    memcpy(&OnigEncodingUTF8, real_utf8, sizeof OnigEncodingUTF8);
    memcpy(&OnigSyntaxRuby, real_ruby, sizeof OnigSyntaxRuby);
    onig_handle = h;
}

/* the real function, or NULL when libonig (or the function) is missing */
static void *onig_sym(const char *name)
{
    pthread_once(&onig_load_once, onig_open);
    return onig_handle ? sym_in(onig_handle, name) : NULL;
}

/* libonig's own object for one of the copies above */
static OnigEncoding real_enc(OnigEncoding e) { return e == &OnigEncodingUTF8 ? real_utf8 : e; }
static OnigSyntaxType *real_syntax(OnigSyntaxType *s) { return s == &OnigSyntaxRuby ? real_ruby : s; }

/* the real function's address, looked up once; `missing` is what the function gives without it */
#define REAL(name, missing)                                                            \
    static void *slot;                                                                 \
    void *lazy_f = __atomic_load_n(&slot, __ATOMIC_ACQUIRE);                           \
    if (!lazy_f) {                                                                     \
        lazy_f = onig_sym(#name);                                                      \
        if (!lazy_f)                                                                   \
            return missing;                                                            \
        __atomic_store_n(&slot, lazy_f, __ATOMIC_RELEASE);                             \
    }

int onig_initialize(OnigEncoding encodings[], int n)
{
    REAL(onig_initialize, MISSING)
    int (*real)(OnigEncoding[], int);
    *(void **)&real = lazy_f;
    OnigEncoding mapped[8];
    if (n < 0 || n > 8)
        return real(encodings, n);
    for (int i = 0; i < n; i++)
        mapped[i] = real_enc(encodings[i]);
    return real(mapped, n);
}

int onig_set_retry_limit_in_match(unsigned long n)
{
    REAL(onig_set_retry_limit_in_match, MISSING)
    int (*real)(unsigned long);
    *(void **)&real = lazy_f;
    return real(n);
}

int onig_new(OnigRegex *reg, const OnigUChar *pattern, const OnigUChar *pattern_end, OnigOptionType option,
             OnigEncoding enc, OnigSyntaxType *syntax, OnigErrorInfo *einfo)
{
    if (reg)
        *reg = NULL;
    REAL(onig_new, MISSING)
    int (*real)(OnigRegex *, const OnigUChar *, const OnigUChar *, OnigOptionType, OnigEncoding, OnigSyntaxType *,
                OnigErrorInfo *);
    *(void **)&real = lazy_f;
    return real(reg, pattern, pattern_end, option, real_enc(enc), real_syntax(syntax), einfo);
}

void onig_free(OnigRegex reg)
{
    REAL(onig_free, )
    void (*real)(OnigRegex);
    *(void **)&real = lazy_f;
    real(reg);
}

int onig_search(OnigRegex reg, const OnigUChar *str, const OnigUChar *end, const OnigUChar *start,
                const OnigUChar *range, OnigRegion *region, OnigOptionType option)
{
    REAL(onig_search, MISSING)
    int (*real)(OnigRegex, const OnigUChar *, const OnigUChar *, const OnigUChar *, const OnigUChar *, OnigRegion *,
                OnigOptionType);
    *(void **)&real = lazy_f;
    return real(reg, str, end, start, range, region, option);
}

OnigRegion *onig_region_new(void)
{
    REAL(onig_region_new, NULL)
    OnigRegion *(*real)(void);
    *(void **)&real = lazy_f;
    return real();
}

void onig_region_free(OnigRegion *region, int free_self)
{
    REAL(onig_region_free, )
    void (*real)(OnigRegion *, int);
    *(void **)&real = lazy_f;
    real(region, free_self);
}

/* onig_error_code_to_str without libonig: the reason it is missing, cut to the size of
 * Oniguruma's messages (rregex_init has reported it whole) */
static int missing_message(OnigUChar *s)
{
    const char *why = lazylib_failure(LAZYLIB_ONIG);
    snprintf((char *)s, ONIG_MAX_ERROR_MESSAGE_LEN, "%s", why ? why : "Oniguruma is missing");
    return (int)strlen((char *)s);
}

/* variadic: the codes below take the OnigErrorInfo of the failed onig_new (as Oniguruma's own
 * regerror.c reads it), the others nothing */
int onig_error_code_to_str(OnigUChar *s, int err_code, ...)
{
    REAL(onig_error_code_to_str, missing_message(s))
    int (*real)(OnigUChar *, int, ...);
    *(void **)&real = lazy_f;
    switch (err_code) {
    case ONIGERR_UNDEFINED_NAME_REFERENCE:
    case ONIGERR_UNDEFINED_GROUP_REFERENCE:
    case ONIGERR_MULTIPLEX_DEFINED_NAME:
    case ONIGERR_MULTIPLEX_DEFINITION_NAME_CALL:
    case ONIGERR_INVALID_GROUP_NAME:
    case ONIGERR_INVALID_CHAR_IN_GROUP_NAME:
    case ONIGERR_INVALID_CHAR_PROPERTY_NAME: {
        va_list ap;
        va_start(ap, err_code);
        OnigErrorInfo *einfo = va_arg(ap, OnigErrorInfo *);
        va_end(ap);
        return real(s, err_code, einfo);
    }
    default:
        return real(s, err_code);
    }
}
