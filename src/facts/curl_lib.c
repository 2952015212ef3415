/* curl_lib.c - libcurl opened with dlopen when the first PuppetDB request is made (curl_lib.h). */
#include "facts/curl_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

curl_api LIBCURL;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static const char *curl_why; /* NULL: loaded */
static char curl_why_buf[512];

static void curl_open(void)
{
    static const char *const libs[] = {"libcurl.so.4", "libcurl.so", NULL};
    static const char *const names[] = {"curl_global_init", "curl_easy_init", "curl_easy_setopt", "curl_easy_perform",
                                        "curl_easy_getinfo", "curl_easy_reset", "curl_easy_cleanup",
                                        "curl_easy_strerror", "curl_easy_escape", "curl_free", "curl_slist_append",
                                        "curl_slist_free_all", "curl_version_info"};
    _Static_assert(sizeof names / sizeof *names == sizeof(curl_api) / sizeof(void *), "one name per pointer");
    void *lib = NULL;
    for (size_t i = 0; libs[i] && !lib; i++)
        lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(curl_why_buf, sizeof curl_why_buf,
                 "cannot load libcurl (libcurl.so.4, Debian package libcurl4), which PuppetDB requests need: %s",
                 dlerror());
        curl_why = curl_why_buf;
        return;
    }
    void **slots = (void **)&LIBCURL;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        slots[i] = dlsym(lib, names[i]);
        if (!slots[i]) {
            snprintf(curl_why_buf, sizeof curl_why_buf, "libcurl has no %s (too old a libcurl)", names[i]);
            curl_why = curl_why_buf;
            return;
        }
    }
    if (LIBCURL.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        curl_why = "libcurl could not be initialised (curl_global_init failed)";
}

bool curl_lib_load(const char **why)
{
    pthread_once(&curl_once, curl_open);
    if (curl_why && why)
        *why = curl_why;
    return curl_why == NULL;
}
