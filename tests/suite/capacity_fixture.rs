//! `csdchar capacity` end to end on a fixture sysfs (CSDCHAR_SYSFS_ROOT): the
//! real device number of a temporary directory is mapped to a ScaleFlux-like
//! disk. The environment variable is the process's: the test runs in a child of
//! the test binary of its own.

use crate::common;

use std::os::unix::fs::{MetadataExt, symlink};

#[test]
fn scaleflux_sysfs_fixture_and_watch() {
    let Ok(root) = std::env::var(csdchar_devices::SYSFS_ROOT_ENV) else {
        let sys = tempfile::tempdir().unwrap();
        common::rerun_in_child(
            &["capacity_fixture::scaleflux_sysfs_fixture_and_watch"],
            true,
            &[(
                csdchar_devices::SYSFS_ROOT_ENV,
                sys.path().to_str().unwrap(),
            )],
        );
        return;
    };
    let r = std::path::Path::new(&root);
    let data = tempfile::Builder::new()
        .prefix("csdchar-cap")
        .tempdir_in("/var/tmp")
        .unwrap();
    let dev = std::fs::metadata(data.path()).unwrap().dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let disk = r.join("devices/pci/block/sfdv0n1");
    std::fs::create_dir_all(disk.join("sfx_smart_features")).unwrap();
    std::fs::write(disk.join("dev"), format!("{major}:{minor}\n")).unwrap();
    std::fs::write(disk.join("size"), "7814037168\n").unwrap();
    std::fs::write(
        disk.join("stat"),
        "10 0 80 0 20 0 160 0 0 0 0 0 0 0 0 0 0\n",
    )
    .unwrap();
    std::fs::write(
        disk.join("sfx_smart_features/sfx_capacity_stat"),
        "free_space: 3000000000000\nphysical_size: 26843545600\nlogical_size: 243739394048\ncomp_ratio: 908%\nspace_flag: 0\nfirmware_thing: x\n",
    )
    .unwrap();
    for d in ["dev/block", "class/block", "block"] {
        std::fs::create_dir_all(r.join(d)).unwrap();
    }
    symlink(&disk, r.join(format!("dev/block/{major}:{minor}"))).unwrap();
    symlink(&disk, r.join("class/block/sfdv0n1")).unwrap();
    symlink(&disk, r.join("block/sfdv0n1")).unwrap();

    let p = data.path().to_str().unwrap();
    let ran = common::csdchar(&["capacity", p, "--output-format", "json"]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    let s = &v["snapshot"];
    assert_eq!(s["device"], "sfdv0n1");
    assert_eq!(s["logical_bytes"].as_u64(), Some(243_739_394_048));
    assert_eq!(s["physical_bytes"].as_u64(), Some(26_843_545_600));
    assert_eq!(s["compression_ratio"].as_f64(), Some(9.08));
    assert_eq!(s["out_of_space"], false);
    assert_eq!(s["capacity_bytes"].as_u64(), Some(7_814_037_168 * 512));
    assert_eq!(
        s["sfx_sysfs"]["raw"]["firmware_thing"], "x",
        "unknown keys are kept"
    );
    assert!(
        s["sources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["figure"] == "logical_bytes" && f["source"] == "sfx_sysfs")
    );

    let ran = common::csdchar(&["capacity", p]);
    assert!(
        ran.stdout.contains("9.08:1") && ran.stdout.contains("[sfx_sysfs]"),
        "{}",
        ran.stdout
    );

    let ran = common::csdchar(&["capacity", p, "--watch", "50ms", "--count", "3"]);
    assert_eq!(ran.outcome.exit_code, 0);
    assert_eq!(
        ran.stdout.lines().count(),
        4,
        "header + 3 lines:\n{}",
        ran.stdout
    );
    let ran = common::csdchar(&[
        "capacity",
        p,
        "--watch",
        "50ms",
        "--count",
        "2",
        "--output-format",
        "json",
    ]);
    for line in ran.stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("one JSON object per line");
        assert_eq!(v["schema"], "csdchar.capacity/1");
    }

    let ran = common::csdchar(&["capacity", "/no/such/path"]);
    assert_eq!(ran.outcome.exit_code, 2);
    assert!(ran.stderr.starts_with("error: TARGET"), "{}", ran.stderr);
}
