/* curl_lib.h - libcurl (the HTTP client for PuppetDB), loaded with dlopen on first use rather
 * than linked (curl_lib.c): a hiera command that never talks to PuppetDB pays nothing for it
 * (libcurl brings OpenSSL, nghttp2, libssh2, Kerberos... thousands of relocations). The pointers
 * are typed from libcurl's own header, so the compiler checks every call; curl_easy_setopt, which
 * is variadic, is reached through the typed helpers below. */
#ifndef HIERA_CLI_CURL_LIB_H
#define HIERA_CLI_CURL_LIB_H

#include <curl/curl.h>
#include <stdbool.h>

typedef struct {
    __typeof__(curl_global_init) *global_init;
    __typeof__(curl_easy_init) *easy_init;
    __typeof__(curl_easy_setopt) *easy_setopt;
    __typeof__(curl_easy_perform) *easy_perform;
    __typeof__(curl_easy_getinfo) *easy_getinfo;
    __typeof__(curl_easy_reset) *easy_reset;
    __typeof__(curl_easy_cleanup) *easy_cleanup;
    __typeof__(curl_easy_strerror) *easy_strerror;
    __typeof__(curl_easy_escape) *easy_escape;
    __typeof__(curl_free) *free;
    __typeof__(curl_slist_append) *slist_append;
    __typeof__(curl_slist_free_all) *slist_free_all;
    __typeof__(curl_version_info) *version_info;
} curl_api;

/* Filled by curl_lib_load. */
extern curl_api LIBCURL;

/* Opens libcurl (libcurl.so.4, Debian's libcurl4: the OpenSSL flavour) and runs
 * curl_global_init, once per process (thread-safe). false with *why (a static message) when it
 * cannot be loaded. */
bool curl_lib_load(const char **why);

/* curl_easy_setopt by the kind of value the option takes; each returns curl's code. */
static inline CURLcode curl_set_long(CURL *h, CURLoption o, long v) { return LIBCURL.easy_setopt(h, o, v); }
static inline CURLcode curl_set_str(CURL *h, CURLoption o, const char *v) { return LIBCURL.easy_setopt(h, o, v); }
static inline CURLcode curl_set_ptr(CURL *h, CURLoption o, void *v) { return LIBCURL.easy_setopt(h, o, v); }
static inline CURLcode curl_set_slist(CURL *h, CURLoption o, struct curl_slist *v) { return LIBCURL.easy_setopt(h, o, v); }
static inline CURLcode curl_set_write_fn(CURL *h, CURLoption o, curl_write_callback v)
{
    return LIBCURL.easy_setopt(h, o, v);
}
static inline CURLcode curl_set_xferinfo_fn(CURL *h, curl_xferinfo_callback v)
{
    return LIBCURL.easy_setopt(h, CURLOPT_XFERINFOFUNCTION, v);
}

#endif
