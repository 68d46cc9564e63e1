//! btrfs: how much of a file or directory is on disk versus uncompressed,
//! through `BTRFS_IOC_TREE_SEARCH_V2` (compsize's method; needs CAP_SYS_ADMIN).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use csdchar_core::capacity::BtrfsUsage;

const BTRFS_SUPER_MAGIC: i64 = 0x9123_683E;
const BTRFS_IOC_TREE_SEARCH_V2: libc::c_ulong = 0xC070_9411;
const EXTENT_DATA_KEY: u32 = 108;
const BUF_BYTES: usize = 64 * 1024;

/// `struct btrfs_ioctl_search_args_v2` with its result buffer.
#[repr(C)]
struct SearchArgs {
    tree_id: u64,
    min_objectid: u64,
    max_objectid: u64,
    min_offset: u64,
    max_offset: u64,
    min_transid: u64,
    max_transid: u64,
    min_type: u32,
    max_type: u32,
    nr_items: u32,
    unused: u32,
    unused1: [u64; 4],
    buf_size: u64,
    buf: [u8; BUF_BYTES],
}

const _: () = assert!(std::mem::offset_of!(SearchArgs, buf) == 112);

/// Whether `path` is on a btrfs file system.
pub fn is_btrfs(path: &Path) -> bool {
    rustix::fs::statfs(path).is_ok_and(|st| st.f_type == BTRFS_SUPER_MAGIC)
}

/// On-disk vs uncompressed bytes of a file, or of every file under a
/// directory (an extent shared by several files counts once). None when the
/// path is not on btrfs.
pub fn usage(path: &Path) -> io::Result<Option<BtrfsUsage>> {
    if !is_btrfs(path) {
        return Ok(None);
    }
    let mut u = BtrfsUsage::default();
    add_path(path, &mut u)?;
    Ok(Some(u))
}

/// On-disk vs uncompressed bytes of `files` together (an extent shared by
/// several counts once). None when any of them is not on btrfs.
pub fn usage_of(files: &[std::path::PathBuf]) -> io::Result<Option<BtrfsUsage>> {
    if !files.iter().all(|f| is_btrfs(f)) {
        return Ok(None);
    }
    let mut u = BtrfsUsage::default();
    for f in files {
        add_path(f, &mut u)?;
    }
    Ok(Some(u))
}

fn add_path(path: &Path, u: &mut BtrfsUsage) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    if meta.is_dir() {
        for e in std::fs::read_dir(path)? {
            add_path(&e?.path(), u)?;
        }
    } else if meta.is_file() {
        add_file(path, meta.ino(), u)?;
    }
    Ok(())
}

fn add_file(path: &Path, ino: u64, u: &mut BtrfsUsage) -> io::Result<()> {
    let f = File::open(path)?;
    let mut args = Box::new(SearchArgs {
        tree_id: 0, // the subvolume of the fd
        min_objectid: ino,
        max_objectid: ino,
        min_offset: 0,
        max_offset: u64::MAX,
        min_transid: 0,
        max_transid: u64::MAX,
        min_type: EXTENT_DATA_KEY,
        max_type: EXTENT_DATA_KEY,
        nr_items: 0,
        unused: 0,
        unused1: [0; 4],
        buf_size: BUF_BYTES as u64,
        buf: [0; BUF_BYTES],
    });
    loop {
        args.nr_items = u32::MAX;
        args.buf_size = BUF_BYTES as u64;
        // Safety: args is a properly laid out search_args_v2 whose buf_size
        // matches the buffer that follows it; the kernel writes within it.
        let rc = unsafe {
            libc::ioctl(
                f.as_raw_fd(),
                BTRFS_IOC_TREE_SEARCH_V2,
                &mut *args as *mut SearchArgs,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        if args.nr_items == 0 {
            return Ok(());
        }
        let last = u
            .add_search_items(&args.buf, args.nr_items)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        match last {
            Some(off) if off < u64::MAX => args.min_offset = off + 1,
            _ => return Ok(()),
        }
    }
}
