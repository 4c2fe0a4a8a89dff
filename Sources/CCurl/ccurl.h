// libcurl for Swift. curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call,
// so each argument type gets one fixed-arity wrapper. No logic lives here.
// Also the Linux calls Swift's Glibc module leaves out, syncfs(2) and fallocate(2): glibc declares
// them only under _GNU_SOURCE, and defining that here would give this module other definitions of
// system types than Glibc's and Dispatch's (a clean build then fails), so they are declared as glibc has them.
#ifndef RESUMECTL_CCURL_H
#define RESUMECTL_CCURL_H

#include <sys/types.h>
#include <curl/curl.h>

extern int syncfs(int fd);
extern int fallocate(int fd, int mode, off_t offset, off_t len);

typedef size_t (*rctl_data_cb)(char *_Nonnull ptr, size_t size, size_t nmemb, void *_Nullable userdata);
typedef int (*rctl_debug_cb)(CURL *_Nonnull handle, curl_infotype type, char *_Nonnull data, size_t size,
                             void *_Nullable userdata);
typedef int (*rctl_xferinfo_cb)(void *_Nullable userdata, curl_off_t dltotal, curl_off_t dlnow,
                                curl_off_t ultotal, curl_off_t ulnow);
typedef int (*rctl_seek_cb)(void *_Nullable userdata, curl_off_t offset, int origin);

static inline CURLcode rctl_setopt_long(CURL *_Nonnull h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode rctl_setopt_off_t(CURL *_Nonnull h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode rctl_setopt_string(CURL *_Nonnull h, CURLoption o, const char *_Nullable v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode rctl_setopt_pointer(CURL *_Nonnull h, CURLoption o, void *_Nullable v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode rctl_setopt_slist(CURL *_Nonnull h, CURLoption o, struct curl_slist *_Nullable v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode rctl_setopt_data_cb(CURL *_Nonnull h, CURLoption o, rctl_data_cb _Nullable v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode rctl_setopt_debug_cb(CURL *_Nonnull h, CURLoption o, rctl_debug_cb _Nullable v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode rctl_setopt_xferinfo_cb(CURL *_Nonnull h, CURLoption o, rctl_xferinfo_cb _Nullable v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode rctl_setopt_seek_cb(CURL *_Nonnull h, CURLoption o, rctl_seek_cb _Nullable v) { return curl_easy_setopt(h, o, v); }

static inline CURLMcode rctl_multi_setopt_long(CURLM *_Nonnull m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }

static inline CURLcode rctl_getinfo_long(CURL *_Nonnull h, CURLINFO i, long *_Nonnull v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode rctl_getinfo_off_t(CURL *_Nonnull h, CURLINFO i, curl_off_t *_Nonnull v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode rctl_getinfo_string(CURL *_Nonnull h, CURLINFO i, char *_Nullable *_Nonnull v) { return curl_easy_getinfo(h, i, v); }

static inline int rctl_syncfs(int fd) { return syncfs(fd); }
static inline int rctl_fallocate(int fd, int64_t length) { return fallocate(fd, 0, 0, (off_t)length); }
/* FALLOC_FL_KEEP_SIZE: the blocks are reserved past the end, the file's length stays. */
static inline int rctl_fallocate_keep_size(int fd, int64_t length) { return fallocate(fd, 0x01, 0, (off_t)length); }
/* FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE (linux/falloc.h): free the blocks, keep the file's length. */
static inline int rctl_punch_hole(int fd, int64_t offset, int64_t length) { return fallocate(fd, 0x02 | 0x01, (off_t)offset, (off_t)length); }

#endif
