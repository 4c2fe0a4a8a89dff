// libcurl, loaded when the first transfer needs it instead of when the program starts.
//
// Debian's libcurl brings some 30 libraries with it (OpenSSL, GnuTLS through librtmp, Kerberos, LDAP,
// libssh2, nghttp2, brotli ...): mapping and relocating them is most of what `resumectl --version`, `list`,
// `show` or `pause` would cost, and none of them needs libcurl. So no program links libcurl (CCurl's module
// map has no `link "curl"`); it links these definitions of the libcurl functions ResumeKit calls, each of
// which makes sure libcurl.so.4 is loaded (dlopen, RTLD_NOW: every symbol bound at once, as the binary's own
// are) and then calls libcurl's own function. A function not listed here fails the link with an undefined
// curl_* symbol: add it to RCTL_CURL_FUNCTIONS.
//
// libcurl that cannot be loaded is a broken installation, as a missing library of the executable would be:
// one line on stderr and exit status 127, as the dynamic loader itself does.
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// The variadic setters and getters take one argument after the option: a long, a curl_off_t or a pointer,
// each passed in one 64-bit integer register on the platforms this builds for; it is forwarded as such.
_Static_assert(sizeof(long) == sizeof(void *) && sizeof(curl_off_t) == sizeof(void *), "LP64 only");

#define RCTL_CURL_FUNCTIONS(X) \
    X(CURLcode, curl_global_init, (long flags), (flags)) \
    X(CURL *, curl_easy_init, (void), ()) \
    X(void, curl_easy_cleanup, (CURL *h), (h)) \
    X(void, curl_easy_reset, (CURL *h), (h)) \
    X(CURLcode, curl_easy_perform, (CURL *h), (h)) \
    X(const char *, curl_easy_strerror, (CURLcode c), (c)) \
    X(CURLcode, curl_easy_pause, (CURL *h, int bitmask), (h, bitmask)) \
    X(CURLM *, curl_multi_init, (void), ()) \
    X(CURLMcode, curl_multi_cleanup, (CURLM *m), (m)) \
    X(CURLMcode, curl_multi_add_handle, (CURLM *m, CURL *h), (m, h)) \
    X(CURLMcode, curl_multi_remove_handle, (CURLM *m, CURL *h), (m, h)) \
    X(CURLMcode, curl_multi_perform, (CURLM *m, int *running), (m, running)) \
    X(CURLMcode, curl_multi_poll, (CURLM *m, struct curl_waitfd fds[], unsigned n, int ms, int *numfds), (m, fds, n, ms, numfds)) \
    X(CURLMcode, curl_multi_wakeup, (CURLM *m), (m)) \
    X(CURLMsg *, curl_multi_info_read, (CURLM *m, int *left), (m, left)) \
    X(const char *, curl_multi_strerror, (CURLMcode c), (c)) \
    X(struct curl_slist *, curl_slist_append, (struct curl_slist *l, const char *s), (l, s)) \
    X(void, curl_slist_free_all, (struct curl_slist *l), (l)) \
    X(char *, curl_version, (void), ()) \
    X(curl_version_info_data *, curl_version_info, (CURLversion v), (v))

#define RCTL_CURL_VARIADIC(X) \
    X(CURLcode, curl_easy_setopt, CURL, CURLoption) \
    X(CURLcode, curl_easy_getinfo, CURL, CURLINFO) \
    X(CURLMcode, curl_multi_setopt, CURLM, CURLMoption)

static struct {
#define RCTL_FIELD(ret, name, params, args) ret (*name) params;
    RCTL_CURL_FUNCTIONS(RCTL_FIELD)
#define RCTL_VFIELD(ret, name, handle, option) ret (*name)(handle *, option, ...);
    RCTL_CURL_VARIADIC(RCTL_VFIELD)
} real;

static pthread_once_t loaded = PTHREAD_ONCE_INIT;

static void fail(const char *what) {
    const char *lines[] = {"resumectl: cannot load libcurl (libcurl.so.4): ", what, "\n"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(lines[i]);
        if (write(2, lines[i], n) != (ssize_t)n) break;
    }
    _exit(127);
}

static void *must(void *library, const char *name) {
    void *function = dlsym(library, name);
    if (!function) fail(dlerror());
    return function;
}

static void load(void) {
    void *library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!library) fail(dlerror());
#define RCTL_LOOKUP(ret, name, ...) *(void **)&real.name = must(library, #name);
    RCTL_CURL_FUNCTIONS(RCTL_LOOKUP)
    RCTL_CURL_VARIADIC(RCTL_LOOKUP)
}

#define RCTL_DEFINE(ret, name, params, args) \
    ret name params { \
        pthread_once(&loaded, load); \
        return real.name args; \
    }
RCTL_CURL_FUNCTIONS(RCTL_DEFINE)

#define RCTL_VDEFINE(ret, name, handle, option) \
    ret name(handle *h, option o, ...) { \
        pthread_once(&loaded, load); \
        va_list ap; \
        va_start(ap, o); \
        void *value = va_arg(ap, void *); \
        va_end(ap); \
        return real.name(h, o, value); \
    }
RCTL_CURL_VARIADIC(RCTL_VDEFINE)
