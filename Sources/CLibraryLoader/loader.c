// Shared libraries loaded when first used instead of when the program starts.
//
// Debian's libcurl brings some 30 libraries with it (OpenSSL, GnuTLS through librtmp, Kerberos, LDAP,
// libssh2, nghttp2, brotli ...), and libcrypto alone has 4,000 symbol and 17,000 relative relocations: as
// libraries of the executable they were most of what `resumectl --version`, `list`, `show` or `pause` cost
// (libcrypto was 80 % of the dynamic loader's start-up work), and none of those needs them. So no program
// links libcurl, libcrypto, ISA-L or libxml2 (their module maps have no `link`); they link these definitions of the
// functions ResumeKit calls, each of which makes sure its library is loaded and then calls the library's own
// function. A function not listed here fails the link with an undefined symbol: add it to its library's list.
//
// dlopen with RTLD_LAZY binds each library as the dynamic loader binds the libraries of an executable: at
// once where the library was linked with BIND_NOW (libcurl, libcrypto, libssl, GnuTLS ... : their GOT is
// read-only after it), lazily where it was not (Kerberos, librtmp, GMP: their GOT stays writable either
// way, so binding all of it at once, as RTLD_NOW did, bought no hardening for some 2,000 symbol lookups a
// transfer did not need). The executable's own binding (BIND_NOW, full RELRO) is not affected.
//
// A library that cannot be loaded is a broken installation, as a missing library of the executable would
// be: one line on stderr and exit status 127, as the dynamic loader itself does.
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <dlfcn.h>
#include <isa-l/crc.h>
#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlreader.h>
// The one-algorithm digests are deprecated in OpenSSL 3 and kept through 3.x (MessageDigest.swift says why).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/md5.h>
#include <openssl/sha.h>
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

#define RCTL_CRYPTO_FUNCTIONS(X) \
    X(int, SHA512_Init, (SHA512_CTX *c), (c)) \
    X(int, SHA512_Update, (SHA512_CTX *c, const void *d, size_t n), (c, d, n)) \
    X(int, SHA512_Final, (unsigned char *md, SHA512_CTX *c), (md, c)) \
    X(int, SHA384_Init, (SHA512_CTX *c), (c)) \
    X(int, SHA384_Update, (SHA512_CTX *c, const void *d, size_t n), (c, d, n)) \
    X(int, SHA384_Final, (unsigned char *md, SHA512_CTX *c), (md, c)) \
    X(int, SHA256_Init, (SHA256_CTX *c), (c)) \
    X(int, SHA256_Update, (SHA256_CTX *c, const void *d, size_t n), (c, d, n)) \
    X(int, SHA256_Final, (unsigned char *md, SHA256_CTX *c), (md, c)) \
    X(int, SHA1_Init, (SHA_CTX *c), (c)) \
    X(int, SHA1_Update, (SHA_CTX *c, const void *d, size_t n), (c, d, n)) \
    X(int, SHA1_Final, (unsigned char *md, SHA_CTX *c), (md, c)) \
    X(int, MD5_Init, (MD5_CTX *c), (c)) \
    X(int, MD5_Update, (MD5_CTX *c, const void *d, size_t n), (c, d, n)) \
    X(int, MD5_Final, (unsigned char *md, MD5_CTX *c), (md, c)) \
    X(const EVP_MD *, EVP_sha256, (void), ()) \
    X(unsigned char *, HMAC, (const EVP_MD *md, const void *key, int key_len, const unsigned char *data, size_t data_len, \
        unsigned char *out, unsigned int *out_len), (md, key, key_len, data, data_len, out, out_len))

#define RCTL_ISAL_FUNCTIONS(X) \
    X(uint32_t, crc32_gzip_refl, (uint32_t crc, const unsigned char *buf, uint64_t len), (crc, buf, len)) \
    X(unsigned int, crc32_iscsi, (unsigned char *buf, int len, unsigned int crc), (buf, len, crc))

// libxml2 reads S3's XML answers, Metalinks (its streaming reader) and HTML folder listings (its HTML parser); a
// plain download never needs its 1.6 MB (and the ICU it may bring), so it is loaded like the others, by the first
// listing or XML document read.
#define RCTL_XML2_FUNCTIONS(X) \
    X(htmlDocPtr, htmlReadMemory, (const char *b, int n, const char *url, const char *enc, int opts), (b, n, url, enc, opts)) \
    X(xmlNodePtr, xmlDocGetRootElement, (const xmlDoc *doc), (doc)) \
    X(void, xmlFreeDoc, (xmlDocPtr doc), (doc)) \
    X(xmlTextReaderPtr, xmlReaderForMemory, (const char *b, int n, const char *url, const char *enc, int opts), \
        (b, n, url, enc, opts)) \
    X(int, xmlTextReaderRead, (xmlTextReaderPtr r), (r)) \
    X(int, xmlTextReaderNodeType, (xmlTextReaderPtr r), (r)) \
    X(int, xmlTextReaderIsEmptyElement, (xmlTextReaderPtr r), (r)) \
    X(int, xmlTextReaderMoveToNextAttribute, (xmlTextReaderPtr r), (r)) \
    X(int, xmlTextReaderIsNamespaceDecl, (xmlTextReaderPtr r), (r)) \
    X(const xmlChar *, xmlTextReaderConstLocalName, (xmlTextReaderPtr r), (r)) \
    X(const xmlChar *, xmlTextReaderConstNamespaceUri, (xmlTextReaderPtr r), (r)) \
    X(const xmlChar *, xmlTextReaderConstValue, (xmlTextReaderPtr r), (r)) \
    X(void, xmlFreeTextReader, (xmlTextReaderPtr r), (r))

#define RCTL_FIELD(ret, name, params, args) ret (*name) params;
#define RCTL_VFIELD(ret, name, handle, option) ret (*name)(handle *, option, ...);
static struct {
    RCTL_CURL_FUNCTIONS(RCTL_FIELD)
    RCTL_CURL_VARIADIC(RCTL_VFIELD)
    RCTL_CRYPTO_FUNCTIONS(RCTL_FIELD)
    RCTL_ISAL_FUNCTIONS(RCTL_FIELD)
    RCTL_XML2_FUNCTIONS(RCTL_FIELD)
} real;

static void fail(const char *library, const char *what) {
    const char *lines[] = {"resumectl: cannot load ", library, ": ", what, "\n"};
    for (int i = 0; i < 5; i++) {
        size_t n = strlen(lines[i]);
        if (write(2, lines[i], n) != (ssize_t)n) break;
    }
    _exit(127);
}

static void *open_library(const char *soname) {
    void *library = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
    if (!library) fail(soname, dlerror());
    return library;
}

static void *must(void *library, const char *soname, const char *name) {
    void *function = dlsym(library, name);
    if (!function) fail(soname, dlerror());
    return function;
}

#define RCTL_LOOKUP(ret, name, ...) *(void **)&real.name = must(library, soname, #name);

static pthread_once_t curl_loaded = PTHREAD_ONCE_INIT;
static void load_curl(void) {
    const char *soname = "libcurl.so.4";
    void *library = open_library(soname);
    RCTL_CURL_FUNCTIONS(RCTL_LOOKUP)
    RCTL_CURL_VARIADIC(RCTL_LOOKUP)
}

static pthread_once_t crypto_loaded = PTHREAD_ONCE_INIT;
static void load_crypto(void) {
    const char *soname = "libcrypto.so.3";
    void *library = open_library(soname);
    RCTL_CRYPTO_FUNCTIONS(RCTL_LOOKUP)
}

static pthread_once_t isal_loaded = PTHREAD_ONCE_INIT;
static void load_isal(void) {
    const char *soname = "libisal.so.2";
    void *library = open_library(soname);
    RCTL_ISAL_FUNCTIONS(RCTL_LOOKUP)
}

static pthread_once_t xml2_loaded = PTHREAD_ONCE_INIT;
static void load_xml2(void) {
    const char *soname = "libxml2.so.2";
    void *library = open_library(soname);
    RCTL_XML2_FUNCTIONS(RCTL_LOOKUP)
}

// Each definition loads its library once (`RCTL_ONCE`), then calls the library's own function.
#define RCTL_DEFINE(ret, name, params, args) \
    ret name params { \
        pthread_once(&RCTL_ONCE); \
        return real.name args; \
    }

#define RCTL_ONCE curl_loaded, load_curl
RCTL_CURL_FUNCTIONS(RCTL_DEFINE)

#define RCTL_VDEFINE(ret, name, handle, option) \
    ret name(handle *h, option o, ...) { \
        pthread_once(&RCTL_ONCE); \
        va_list ap; \
        va_start(ap, o); \
        void *value = va_arg(ap, void *); \
        va_end(ap); \
        return real.name(h, o, value); \
    }
RCTL_CURL_VARIADIC(RCTL_VDEFINE)
#undef RCTL_ONCE

#define RCTL_ONCE crypto_loaded, load_crypto
RCTL_CRYPTO_FUNCTIONS(RCTL_DEFINE)
#undef RCTL_ONCE

#define RCTL_ONCE isal_loaded, load_isal
RCTL_ISAL_FUNCTIONS(RCTL_DEFINE)
#undef RCTL_ONCE

#define RCTL_ONCE xml2_loaded, load_xml2
RCTL_XML2_FUNCTIONS(RCTL_DEFINE)
#undef RCTL_ONCE
