import CCurl

/// Writes every dirty page and inode of the filesystem holding `fd` to disk, with one journal commit
/// (syncfs(2)); 0 or -1 with errno set. Lives here because only this folder speaks to C shims.
func syncFileSystem(containing fd: Int32) -> Int32 { rctl_syncfs(fd) }
