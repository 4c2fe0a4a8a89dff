// openat2(2) for `serve`'s downloads and uploads, in C because glibc has no wrapper and syscall(2) is variadic
// (Swift cannot call it). Header only, no library.
#ifndef RESUMECTL_COPENCACHED_H
#define RESUMECTL_COPENCACHED_H
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

/// Opens `path` (absolute) with `flags` only if no component of it is a symbolic link
/// (RESOLVE_NO_SYMLINKS, the last one included) and every component is already in the kernel's
/// dentry cache (RESOLVE_CACHED, Linux 5.12): such an open never waits for a disk, so it may run on an
/// event loop. -1 with errno set otherwise: EAGAIN when a lookup would have to read the disk, ELOOP for
/// a link, ENOSYS or EINVAL on a kernel without openat2 or RESOLVE_CACHED.
static inline int resumectl_open_cached(const char *path, int flags) {
    struct open_how how = {
        .flags = (unsigned long long)flags,
        .mode = 0,
        .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_CACHED,
    };
    return (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
}

/// Opens `path` (relative, made of plain names) below the folder `dirfd` with `flags` and `mode`, never
/// leaving it (RESOLVE_BENEATH) and following no symbolic link on the way (RESOLVE_NO_SYMLINKS, the last
/// component included, unless `flags` has O_PATH | O_NOFOLLOW: then the link itself is opened). -1 with
/// errno set otherwise: ELOOP for a link, EXDEV for a path that would leave `dirfd`.
static inline int resumectl_open_beneath(int dirfd, const char *path, int flags, unsigned int mode) {
    struct open_how how = {
        .flags = (unsigned long long)flags,
        .mode = (flags & O_CREAT) ? (unsigned long long)mode : 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}
#endif
