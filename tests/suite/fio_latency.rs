//! fio's percentile switches (`slat_percentiles`, `clat_percentiles`,
//! `lat_percentiles`) in fio-json and fio-json+: the same `_ns` objects
//! carry `percentile` (and `bins`) in csdchar's output as in fio's for the
//! same job.

use crate::common;
use crate::fio_parity::fio;

/// For `read` and `write`: which of slat_ns, clat_ns, lat_ns hold
/// `percentile` and `bins`.
fn carried(v: &serde_json::Value) -> Vec<(String, bool, bool)> {
    let j = &v["jobs"][0];
    let mut out = Vec::new();
    for d in ["read", "write"] {
        for k in ["slat_ns", "clat_ns", "lat_ns"] {
            let o = &j[d][k];
            assert!(o["N"].as_u64().unwrap() > 0, "{d} {k}: {o}");
            out.push((
                format!("{d}.{k}"),
                o.get("percentile").is_some(),
                o.get("bins").is_some(),
            ));
        }
    }
    out
}

#[test]
fn percentile_switches_pick_the_objects_fio_fills() {
    if fio().is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    for (switches, format) in [
        ("", "json"),
        ("lat_percentiles=1\nslat_percentiles=1\n", "json"),
        ("lat_percentiles=1\nslat_percentiles=1\n", "json+"),
        ("clat_percentiles=0\nlat_percentiles=1\n", "json+"),
    ] {
        let path = d.path().join("p.fio");
        // The switches in [global], one overridden by the job's own line.
        std::fs::write(
            &path,
            format!(
                "[global]\nioengine=io_uring\nfilename={}/data\nsize=8m\nrw=randrw\n{switches}\
                 [p]\nslat_percentiles=0\n",
                d.path().display()
            ),
        )
        .unwrap();
        let out = std::process::Command::new(fio().unwrap())
            .args([&format!("--output-format={format}"), path.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let theirs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let ours_format = if format == "json" {
            "fio-json"
        } else {
            "fio-json+"
        };
        let r = common::csdchar(&[
            "block",
            "--job-file",
            path.to_str().unwrap(),
            "--output-format",
            ours_format,
        ]);
        assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
        let ours: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(carried(&theirs), carried(&ours), "{switches:?} {format}");
    }
}
