//! ZFS: which dataset a path is on (`/proc/self/mountinfo`: file system
//! type `zfs`, or `fuse.zfs` for zfs-fuse, mounted from the dataset's name),
//! and its figures through the `zfs` and `zpool` commands — no maintained
//! crate reads them without linking libzfs, whose ABI changes between
//! releases, so csdchar runs the tools, as the reference suggests.
//!
//! Files: `usage` (reading a dataset's figures), `tools` (running zfs and zpool),
//! `properties` (values a ZFS accepts), `daemon` (zfs-fuse's) and `pool` (the pools
//! csdchar makes for campaign targets).

mod daemon;
mod pool;
mod properties;
mod tools;
mod usage;

pub use pool::*;
pub use properties::*;
pub use tools::*;
pub use usage::*;

#[cfg(test)]
mod tests {
    use super::daemon::{Daemon, start_time};
    use super::pool::Marker;
    use super::*;

    #[test]
    fn numbers_read_as_zfs_reads_them() {
        for (v, n) in [
            ("512", Some(512)),
            ("8k", Some(8192)),
            ("8K", Some(8192)),
            ("8KB", Some(8192)),
            ("8kb", Some(8192)),
            ("128k", Some(128 << 10)),
            ("1M", Some(1 << 20)),
            ("0.5k", Some(512)),
            (".5k", Some(512)),
            ("1.5k", Some(1536)),
            ("4096b", Some(4096)),
            ("4096BB", None),
            ("8kk", None),
            ("8x", None),
            ("k8", None),
            ("1.2.3k", None),
            ("", None),
            ("16E", None),
        ] {
            assert_eq!(parse_number(v), n, "{v}");
        }
    }

    #[test]
    fn property_values_are_checked_per_flavour() {
        let fuse = Flavour::ZfsFuse;
        for (p, v) in [
            ("compression", "gzip-9"),
            ("compression", "zle"),
            ("recordsize", "8k"),
            ("recordsize", "128K"),
            ("recordsize", "512"),
            ("copies", "3"),
            ("dedup", "sha256,verify"),
            ("primarycache", "metadata"),
        ] {
            assert_eq!(check_property(fuse, p, v), Ok(()), "{p}={v}");
        }
        let e = check_property(fuse, "compression", "bogus").unwrap_err();
        assert_eq!(e.kind, crate::DeviceErrorKind::Invalid);
        assert_eq!(
            e.message,
            "'bogus' is not a value zfs-fuse's zfs allows \
             (allowed: on | off | lzjb | gzip | gzip-[1-9] | zle)"
        );
        let e = check_property(fuse, "recordsize", "3k")
            .unwrap_err()
            .message;
        assert!(
            e.ends_with("(allowed: a power of 2 from 512 to 128k)"),
            "{e}"
        );
        for (p, v) in [
            ("compression", "lz4"),
            ("compression", "gzip-0"),
            ("compression", "gzip-10"),
            ("compression", "gzip-01"),
            ("compression", "GZIP"),
            ("recordsize", "256k"),
            ("recordsize", "256"),
            ("copies", "4"),
            ("checksum", "sha512"),
        ] {
            assert!(check_property(fuse, p, v).is_err(), "{p}={v}");
        }
        assert_eq!(
            check_property(fuse, "sync", "always").unwrap_err().message,
            "zfs-fuse has no dataset property sync"
        );
        let open = Flavour::OpenZfs;
        for (p, v) in [
            ("compression", "lz4"),
            ("compression", "zstd-19"),
            ("compression", "zstd-fast-1000"),
            ("compression", "zstd-fast-30"),
            ("sync", "always"),
            ("checksum", "blake3"),
            ("recordsize", "1M"),
        ] {
            assert_eq!(check_property(open, p, v), Ok(()), "{p}={v}");
        }
        for (p, v) in [
            ("compression", "zstd-20"),
            ("compression", "zstd-fast-11"),
            ("compression", "zstd-fast-200"),
            ("sync", "sometimes"),
        ] {
            assert!(check_property(open, p, v).is_err(), "{p}={v}");
        }
    }

    #[test]
    fn a_marker_reads_back_and_refuses_other_text() {
        let m = Marker {
            run: (4242, 987654),
            uid: 0,
            daemon: Some(Daemon { pid: 77, start: 12 }),
            pool: "csdchar_c_gz".into(),
            dir: "/var/tmp/csdchar-campaign-a b-gz.Xy12Ab".into(),
        };
        assert_eq!(Marker::parse(&m.line()), Some(m.clone()));
        assert_eq!(Marker::parse(&format!("{}\n", m.line())), Some(m.clone()));
        let none = Marker { daemon: None, ..m };
        assert!(none.line().contains(" daemon 0 0 "), "{}", none.line());
        assert_eq!(Marker::parse(&none.line()), Some(none.clone()));
        for bad in [
            "",
            "csdchar-zfs 2 pid 1 2 uid 0 daemon 0 0 pool p dir /x",
            "csdchar-zfs 1 pid 1 2 uid 0 daemon 0 0 pool p",
            "csdchar-zfs 1 pid x 2 uid 0 daemon 0 0 pool p dir /x",
            "csdchar-run 1\npid 1 2\nuid 0\nwatchdog 3 4\n",
        ] {
            assert_eq!(Marker::parse(bad), None, "{bad}");
        }
        // A process that runs is not gone; one with another start time is.
        let me = std::process::id() as i32;
        let live = Marker {
            run: (me, start_time(me).unwrap()),
            ..none.clone()
        };
        assert!(!live.run_gone());
        assert!(
            Marker {
                run: (me, 1),
                ..live
            }
            .run_gone()
        );
    }

    #[test]
    fn mount_points_are_unescaped() {
        assert_eq!(
            unescape_mount("/var/tmp/a\\040b/mnt").as_deref(),
            Some("/var/tmp/a b/mnt")
        );
        assert_eq!(unescape_mount("/plain").as_deref(), Some("/plain"));
    }

    #[test]
    fn missing_tools_are_named() {
        let d = tempfile::tempdir().unwrap();
        let dirs = [d.path().to_path_buf()];
        let e = missing_tools(&dirs, false).unwrap();
        assert_eq!(e.kind, crate::DeviceErrorKind::Missing);
        assert!(e.message.starts_with("`zpool` is not installed"), "{e}");
        for tool in ["zpool", "zfs"] {
            std::fs::write(d.path().join(tool), "").unwrap();
        }
        assert_eq!(missing_tools(&dirs, true), None);
        let e = missing_tools(&dirs, false).unwrap();
        assert!(e.message.contains("nor zfs-fuse"), "{e}");
        std::fs::write(d.path().join("zfs-fuse"), "").unwrap();
        assert_eq!(missing_tools(&dirs, false), None);
    }
}
