import CCurl
import Glibc

// Linux calls Swift's Glibc module leaves out (declared only under _GNU_SOURCE); they live here
// because only this folder speaks to the C shims.

/// Writes every dirty page and inode of the filesystem holding `fd` to disk, with one journal commit
/// (syncfs(2)); 0, or -1 with errno set.
func syncFileSystem(containing fd: Int32) -> Int32 { rctl_syncfs(fd) }

/// Reserves the blocks of `0..<length` (fallocate(2), mode 0). Unlike posix_fallocate it never writes zeros:
/// where the filesystem cannot, it fails (EOPNOTSUPP) and the file stays sparse. 0, or -1 with errno set.
func reserveSpace(_ fd: Int32, length: Int64) -> Int32 { rctl_fallocate(fd, length) }

/// The same with FALLOC_FL_KEEP_SIZE: the file's length stays what was written, so the blocks wait past its end.
func reserveSpaceAhead(_ fd: Int32, length: Int64) -> Int32 { rctl_fallocate_keep_size(fd, length) }

/// Frees the blocks of `offset..<offset+length`, the length unchanged (FALLOC_FL_PUNCH_HOLE): a spool gives
/// back the space of acknowledged bytes. 0, or -1 with errno set (EOPNOTSUPP where the filesystem cannot).
func punchHole(_ fd: Int32, offset: Int64, length: Int64) -> Int32 { rctl_punch_hole(fd, offset, length) }
