//! `csdchar report` on committed fixture results: golden statistics, the
//! comparison of two devices, every artifact, bad inputs, and the HTML page
//! rendered by headless Chromium.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report")
}

fn fixture(rel: &str) -> String {
    fixtures().join(rel).display().to_string()
}

fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("csdchar-report")
        .tempdir()
        .expect("temp dir")
}

/// A table CSV as rows of column → raw value (the fixtures' values hold no commas).
fn read_table(path: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split(',').map(String::from))
                .collect()
        })
        .collect()
}

fn num(row: &HashMap<String, String>, col: &str) -> f64 {
    row.get(col)
        .unwrap_or_else(|| panic!("no column {col} in {row:?}"))
        .parse()
        .unwrap_or_else(|_| panic!("{col} is not a number in {row:?}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn row<'a>(
    rows: &'a [HashMap<String, String>],
    label: &str,
    threads: &str,
) -> &'a HashMap<String, String> {
    rows.iter()
        .find(|r| r["label"] == label && r["threads"] == threads)
        .unwrap_or_else(|| panic!("no row {label}/{threads} in {rows:?}"))
}

/// Runs `csdchar report` on the two fixture devices (intel first: the
/// baseline) plus `extra`, into a fresh directory.
fn report_two_devices(extra: &[&str]) -> (tempfile::TempDir, PathBuf, common::Ran) {
    let out = tmp();
    let dir = out.path().join("r");
    let intel = format!("intel={}", fixture("intel"));
    let csd = format!("csd={}", fixture("csd"));
    let mut args = vec![
        "report",
        "--out",
        dir.to_str().unwrap(),
        "--label",
        &intel,
        "--label",
        &csd,
    ];
    args.extend_from_slice(extra);
    let ran = common::csdchar(&args);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    (out, dir, ran)
}

/// A decoded PNG.
struct Image {
    width: u32,
    height: u32,
    channels: usize,
    data: Vec<u8>,
}

impl Image {
    fn read(path: &Path) -> Image {
        let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut reader = png::Decoder::new(std::io::BufReader::new(file))
            .read_info()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut data = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut data).unwrap();
        data.truncate(info.buffer_size());
        Image {
            width: info.width,
            height: info.height,
            channels: info.color_type.samples(),
            data,
        }
    }

    fn pixels(&self) -> impl Iterator<Item = &[u8]> {
        self.data.chunks(self.channels)
    }

    /// Pixels in `rows` that are not (near) white.
    fn non_white(&self, rows: std::ops::Range<u32>) -> usize {
        let row_bytes = self.width as usize * self.channels;
        self.data[rows.start as usize * row_bytes..rows.end as usize * row_bytes]
            .chunks(self.channels)
            .filter(|p| p.iter().take(3).any(|&c| c < 235))
            .count()
    }
}

fn plot_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir.join("plots"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Every chart is also a PNG, of the SVG's size, with its caption drawn (the
/// font is compiled in) and a plot below it.
fn assert_pngs_match_svgs(dir: &Path) {
    let plots = plot_names(dir);
    for svg_name in plots.iter().filter(|p| p.ends_with(".svg")) {
        let stem = svg_name.trim_end_matches(".svg");
        let svg = std::fs::read_to_string(dir.join("plots").join(svg_name)).unwrap();
        let img = Image::read(&dir.join("plots").join(format!("{stem}.png")));
        assert!(
            svg.contains(&format!(
                "width=\"{}\" height=\"{}\"",
                img.width, img.height
            )),
            "{stem}: PNG is {}x{}",
            img.width,
            img.height
        );
        let caption = img.non_white(0..30);
        let body = img.non_white(40..img.height);
        assert!(
            caption > 200,
            "{stem}: caption not drawn ({caption} pixels)"
        );
        assert!(body > 2000, "{stem}: chart not drawn ({body} pixels)");
    }
}

#[test]
fn golden_statistics_and_device_comparison() {
    let (_out, dir, ran) = report_two_devices(&[]);
    assert!(ran.stdout.contains("csd vs intel"), "{}", ran.stdout);

    // Interval TPS of the fixtures: intel 1 thread 100,110,90,120,80; 2 threads
    // 150 x5; csd 1 thread 198,202,200,199,201; 2 threads 300,310,290,305,295.
    // QPS is 20 x TPS (14 reads, 4 writes, 2 others).
    let summary = read_table(&dir.join("tables/db-summary.csv"));
    assert_eq!(summary.len(), 4);
    let expect = [
        ("intel", "1", 100.0, 250.0, 10.0, 20.0, 30.0),
        ("intel", "2", 150.0, 0.0, 13.0, 25.0, 40.0),
        ("csd", "1", 200.0, 2.5, 5.0, 8.0, 12.0),
        ("csd", "2", 300.0, 62.5, 6.5, 10.0, 16.0),
    ];
    for (label, threads, mean, var, avg, p95, p99) in expect {
        let r = row(&summary, label, threads);
        assert_eq!(r["intervals"], "5");
        assert!(close(num(r, "tps avg"), mean), "{r:?}");
        assert!(close(num(r, "tps variance"), var), "{r:?}");
        assert!(close(num(r, "tps cv"), var.sqrt() / mean), "{r:?}");
        assert!(close(num(r, "qps avg"), 20.0 * mean), "{r:?}");
        assert!(close(num(r, "qps variance"), 400.0 * var), "{r:?}");
        assert!(close(num(r, "reads/s"), 14.0 * mean), "{r:?}");
        assert!(close(num(r, "writes/s"), 4.0 * mean), "{r:?}");
        assert!(close(num(r, "others/s"), 2.0 * mean), "{r:?}");
        assert!(close(num(r, "lat avg ms"), avg), "{r:?}");
        assert!(close(num(r, "lat p95 ms"), p95), "{r:?}");
        assert!(close(num(r, "lat p99 ms"), p99), "{r:?}");
        assert_eq!(r["workload"], "oltp_read_write");
    }

    let cmp = read_table(&dir.join("tables/compare-csd-vs-intel.csv"));
    assert_eq!(cmp.len(), 2);
    let one = cmp.iter().find(|r| r["threads"] == "1").unwrap();
    assert!(close(num(one, "tps intel"), 100.0));
    assert!(close(num(one, "tps csd"), 200.0));
    assert!(close(num(one, "tps ratio"), 2.0));
    assert!(close(num(one, "qps ratio"), 2.0));
    assert!(close(num(one, "lat avg ms ratio"), 0.5));
    assert!(close(num(one, "lat p99 ms ratio"), 0.4));
    assert!(close(num(one, "tps variance ratio"), 0.01));
    let two = cmp.iter().find(|r| r["threads"] == "2").unwrap();
    assert!(close(num(two, "tps ratio"), 2.0));
    // Zero variance on the baseline: no ratio rather than infinity.
    assert_eq!(two["tps variance ratio"], "");

    // Space from the runs' device counters: 10 GiB logical each, 10 vs 4 GiB physical.
    let space = read_table(&dir.join("tables/space.csv"));
    let csd = space.iter().find(|r| r["label"] == "csd").unwrap();
    assert!(close(num(csd, "ratio"), 2.5), "{csd:?}");
    assert!(close(num(csd, "physical"), 4.0 * (1u64 << 30) as f64));
    let intel = space.iter().find(|r| r["label"] == "intel").unwrap();
    assert!(close(num(intel, "ratio"), 1.0), "{intel:?}");

    // The exports: one row per interval sample, the documented columns.
    let csv = std::fs::read_to_string(dir.join("intervals.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let documented: Vec<&str> = csdchar_report::INTERVAL_COLUMNS
        .iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(header, documented);
    assert_eq!(lines.count(), 20);
    let parquet = std::fs::read(dir.join("intervals.parquet")).unwrap();
    assert!(parquet.starts_with(b"PAR1") && parquet.ends_with(b"PAR1"));
    // Results from before I/O sampling: the io columns are null, no io table or chart.
    let riops = header.iter().position(|c| *c == "riops").unwrap();
    assert!(
        csv.lines()
            .skip(1)
            .all(|l| l.split(',').nth(riops) == Some(""))
    );
    assert!(!dir.join("tables/io.csv").exists());

    // Charts: TPS and QPS over time per run, the sweep (A vs B), space bars.
    let plots = plot_names(&dir);
    for prefix in [
        "tps-intel-",
        "tps-csd-",
        "qps-intel-",
        "qps-csd-",
        "sweep-oltp_read_write-100",
        "space-csd",
    ] {
        assert!(
            plots
                .iter()
                .any(|p| p.starts_with(prefix) && p.ends_with(".svg")),
            "{prefix}: {plots:?}"
        );
    }
    assert_pngs_match_svgs(&dir);
    // sysbench results have no TPC-C figures: no TPC-C tables or charts.
    assert!(!dir.join("tables/tpcc.csv").exists());
    assert!(!plots.iter().any(|p| p.starts_with("tpcc-")), "{plots:?}");
    assert!(!plots.iter().any(|p| p.starts_with("pgio-")), "{plots:?}");
    let sweep = std::fs::read_to_string(dir.join("plots/sweep-oltp_read_write-100.svg")).unwrap();
    assert!(sweep.starts_with("<svg") || sweep.starts_with("<?xml"));
    for text in [
        "threads",
        "transactions per second",
        "p95 latency (ms)",
        "intel",
        "csd",
    ] {
        assert!(sweep.contains(text), "{text} missing from the sweep chart");
    }
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("## csd vs intel"), "{md}");
    assert!(
        md.contains("| intel | oltp_read_write | 100 (default) | 1 | 5 | 100.00 | 250.00 |"),
        "{md}"
    );
}

#[test]
fn labels_default_to_the_device_and_every_kind_is_reported() {
    let out = tmp();
    let dir = out.path().join("r");
    let ran = common::csdchar(&[
        "report",
        "-q",
        "--out",
        dir.to_str().unwrap(),
        &fixture("intel/db-oltp_read_write.json"),
        &fixture("csd"),
        &fixture("study.json"),
        &fixture("block.json"),
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(ran.stdout.is_empty(), "-q prints no tables");
    // The db fixtures recorded their drives; the first is the baseline.
    assert!(dir.join("tables/compare-sfdv0n1-vs-nvme0n1.csv").exists());
    // The study: one space row per fillfactor, growth against the first.
    let space = read_table(&dir.join("tables/space.csv"));
    let study: Vec<_> = space.iter().filter(|r| r["origin"] == "study").collect();
    assert_eq!(study.len(), 2, "{space:?}");
    assert_eq!(study[0]["fillfactor"], "100");
    assert_eq!(study[1]["fillfactor"], "70");
    assert!(close(num(study[0], "logical growth"), 0.0));
    assert!(close(num(study[1], "logical"), 1_884_160.0));
    assert!(close(
        num(study[1], "logical growth"),
        1_884_160.0 / 1_359_872.0 - 1.0
    ));
    // The block run: per job and total, with the data's measured compressibility.
    let block = read_table(&dir.join("tables/block.csv"));
    assert_eq!(block.len(), 3, "2 jobs + total: {block:?}");
    let total = block.iter().find(|r| r["job"] == "all").unwrap();
    assert_eq!(total["rw"], "randrw");
    assert!(num(total, "read iops") > 0.0 && num(total, "write iops") > 0.0);
    assert!(close(num(total, "target ratio"), 4.0));
    assert!(num(total, "deflate ratio") > 2.0, "{total:?}");
    let plots = plot_names(&dir);
    assert!(plots.iter().any(|p| p.starts_with("block-")), "{plots:?}");
    assert!(
        plots
            .iter()
            .any(|p| p.starts_with("tps-") && p.contains("-70-")),
        "study fillfactor 70 run: {plots:?}"
    );
    // Block and db samples share one export.
    let csv = std::fs::read_to_string(dir.join("intervals.csv")).unwrap();
    assert!(csv.lines().any(|l| l.contains(",block,")));
    assert!(csv.lines().any(|l| l.contains(",db,")));
}

#[test]
fn bad_inputs_name_the_file_exit_2_and_write_nothing() {
    let work = tmp();
    let good = fixture("intel/db-oltp_read_write.json");
    let original = std::fs::read_to_string(&good).unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "truncated.json",
            original[..original.len() / 2].to_string(),
            "not JSON",
        ),
        (
            "notours.json",
            "{\"jobs\": []}".to_string(),
            "no \"schema\" field",
        ),
        (
            "future.json",
            original.replacen("csdchar.db/1", "csdchar.db/9", 1),
            "schema csdchar.db/9 is not supported",
        ),
        (
            "wrongtype.json",
            original.replacen("\"threads\": 1", "\"threads\": \"one\"", 1),
            "does not match csdchar.db/1",
        ),
    ];
    for (name, content, expect) in cases {
        let path = work.path().join(name);
        std::fs::write(&path, content).unwrap();
        let out = work.path().join(format!("out-{name}"));
        let ran = common::csdchar(&[
            "report",
            "--out",
            out.to_str().unwrap(),
            &good,
            path.to_str().unwrap(),
        ]);
        assert_eq!(ran.outcome.exit_code, 2, "{name}: {}", ran.stderr);
        assert_eq!(ran.stderr.trim_end().lines().count(), 1, "{}", ran.stderr);
        assert!(ran.stderr.contains(name), "{name}: {}", ran.stderr);
        assert!(ran.stderr.contains(expect), "{name}: {}", ran.stderr);
        assert!(!out.exists(), "{name}: nothing may be written");
        std::fs::remove_file(&path).unwrap();
    }
    let out = work.path().join("out");
    for args in [
        vec![
            "report",
            "--out",
            out.to_str().unwrap(),
            "/nonexistent/result.json",
        ],
        vec![
            "report",
            "--out",
            out.to_str().unwrap(),
            "--label",
            "nolabel",
            &good,
        ],
        vec!["report", "--out", out.to_str().unwrap()],
        vec!["report", "--out", &good, &good],
    ] {
        let ran = common::csdchar(&args);
        assert_eq!(ran.outcome.exit_code, 2, "{args:?}: {}", ran.stderr);
        assert_eq!(ran.stderr.trim_end().lines().count(), 1, "{}", ran.stderr);
        assert!(!out.exists());
    }
    // An empty directory is an error too, naming it.
    let empty = work.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let ran = common::csdchar(&[
        "report",
        "--out",
        out.to_str().unwrap(),
        empty.to_str().unwrap(),
    ]);
    assert_eq!(ran.outcome.exit_code, 2);
    assert!(ran.stderr.contains("empty"), "{}", ran.stderr);
}

#[test]
fn export_columns_are_documented_in_docs() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report.md"))
        .unwrap();
    let table = csdchar_report::interval_columns_markdown();
    assert!(
        doc.contains(&table),
        "docs/report.md is out of date; its column table must read:\n{table}"
    );
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH")?
                .to_str()?
                .split(':')
                .map(|d| Path::new(d).join(name))
                .find(|p| p.is_file())
        })
}

#[test]
fn html_is_self_contained_and_renders_in_headless_chromium() {
    // TPC-C results too: their tables and charts render alongside the others.
    let (out, dir, _) = report_two_devices(&[
        "-q",
        &fixture("study.json"),
        &fixture("block.json"),
        &fixture("tpcc-ssd"),
        &fixture("tpcc-csd"),
        &fixture("pgio-disk"),
        &fixture("pgio-zram"),
    ]);
    let html_path = dir.join("report.html");
    let html = std::fs::read_to_string(&html_path).unwrap();
    // Self-contained: no scripts, stylesheets, images or fonts from elsewhere.
    for needle in ["<script", "<link", "src=", "url(", "@import"] {
        assert!(!html.contains(needle), "report.html contains {needle}");
    }
    assert!(html.matches("<svg").count() >= 5, "inline charts");
    // Every chart on the page has its own files: none overwrote another (the
    // fixtures' unset fillfactor and the study's explicit 100 share one sweep).
    let svg_files = plot_names(&dir)
        .iter()
        .filter(|p| p.ends_with(".svg"))
        .count();
    assert_eq!(html.matches("<svg").count(), svg_files);
    let sweep = std::fs::read_to_string(dir.join("plots/sweep-oltp_read_write-100.svg")).unwrap();
    for label in ["intel", "csd", "vda"] {
        assert!(
            sweep.contains(&format!("\n{label}\n")),
            "{label} missing from the sweep"
        );
    }
    assert!(html.contains("<table") && html.contains("csd vs intel"));
    assert!(html.contains("id=\"tpcc\"") && html.contains("id=\"tpcc-tpmc-10w-100\""));
    // pgio's io table and RIOPS charts too (labelled by their drives).
    assert!(html.contains("id=\"io\"") && html.contains("id=\"pgio-riops-zram0-"));

    let Some(browser) = chromium() else {
        // scripts/test.sh installs Chromium when run as root and then requires
        // the check (CSDCHAR_REQUIRE_BROWSER), as does any CI.
        assert!(
            std::env::var_os("CI").is_none()
                && std::env::var_os("CSDCHAR_REQUIRE_BROWSER").is_none(),
            "chromium is not installed, and this run must do the browser check"
        );
        eprintln!("skipping the browser check: chromium is not installed");
        return;
    };
    let profile = tmp();
    let shot = out.path().join("shot.png");
    let mut child = Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-quic",
            "--hide-scrollbars",
            "--window-size=1400,2400",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", html_path.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start chromium");
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "chromium failed: {stderr}");
    assert!(shot.exists(), "no screenshot: {stderr}");
    let img = Image::read(&shot);
    assert!(
        img.width >= 1000 && img.height >= 1000,
        "{}x{}",
        img.width,
        img.height
    );
    // Text, table rules and chart lines: a blank page has none.
    let (non_white, total) = (img.non_white(0..img.height), img.pixels().count());
    assert!(
        non_white * 100 > total,
        "screenshot is blank: {non_white} of {total} pixels drawn"
    );
    // Not a single flat colour either (an error page is mostly one grey).
    let distinct: std::collections::HashSet<&[u8]> = img.pixels().take(2_000_000).collect();
    assert!(distinct.len() > 20, "{} colours", distinct.len());
}

#[test]
fn a_fresh_block_result_is_reported() {
    let work = tmp();
    let result = work.path().join("fresh.json");
    let ran = common::csdchar(&[
        "block",
        "--engine",
        "null",
        "--rw",
        "randwrite",
        "--compress",
        "50",
        "--runtime",
        "1500ms",
        "--time-based",
        "--log-interval",
        "250ms",
        "--output-format",
        "json",
        "--output",
        result.to_str().unwrap(),
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let dir = work.path().join("r");
    let ran = common::csdchar(&[
        "report",
        "--out",
        dir.to_str().unwrap(),
        "--label",
        &format!("null={}", result.display()),
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let block = read_table(&dir.join("tables/block.csv"));
    assert_eq!(block.len(), 1);
    assert_eq!(block[0]["label"], "null");
    assert!(num(&block[0], "write iops") > 0.0);
    assert!(close(num(&block[0], "target ratio"), 2.0));
    let csv = std::fs::read_to_string(dir.join("intervals.csv")).unwrap();
    assert!(csv.lines().count() >= 4, "{csv}");
    assert!(dir.join("plots/block-null-randwrite-0.svg").exists());
}

#[test]
fn interrupted_and_failed_inputs_are_named_on_stderr_and_marked_in_the_report() {
    let work = tmp();
    // A block run stopped by Ctrl-C (the flag is already set when it starts).
    let stopped = work.path().join("stopped.json");
    let ran = common::csdchar_with_interrupt(
        &[
            "block",
            "--engine",
            "null",
            "--runtime",
            "1s",
            "--time-based",
            "--output-format",
            "json",
            "--output",
            stopped.to_str().unwrap(),
        ],
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true)),
    );
    assert_eq!(ran.outcome.exit_code, 130, "{}", ran.stderr);
    // A database run that failed part-way.
    let failed = work.path().join("failed.json");
    let db = std::fs::read_to_string(fixture("intel/db-oltp_read_write.json")).unwrap();
    let db = db
        .replacen("\"interrupted\": false", "\"interrupted\": true", 1)
        .replacen(
            "\"error\": null",
            "\"error\": \"server closed the connection\\nunexpectedly\"",
            1,
        );
    std::fs::write(&failed, db).unwrap();
    let complete = fixture("csd/db-oltp_read_write.json");

    let dir = work.path().join("r");
    let ran = common::csdchar(&[
        "report",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
        "--label",
        &format!("stopped={}", stopped.display()),
        "--label",
        &format!("failed={}", failed.display()),
        &complete,
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let notes: Vec<&str> = ran
        .stderr
        .lines()
        .filter(|l| l.starts_with("note: "))
        .collect();
    assert_eq!(notes.len(), 2, "{}", ran.stderr);
    assert!(
        notes[0].contains("stopped.json (stopped): interrupted"),
        "{}",
        notes[0]
    );
    assert!(
        notes[1]
            .contains("failed.json (failed): failed: server closed the connection unexpectedly"),
        "{}",
        notes[1]
    );
    // The tables and the page say so too.
    let table = read_table(&dir.join("tables/incomplete.csv"));
    let labels: Vec<&str> = table.iter().map(|r| r["label"].as_str()).collect();
    assert_eq!(labels, ["stopped", "failed"]);
    assert!(table[0]["status"].starts_with("interrupted"));
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("## Incomplete inputs"), "{md}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<strong>interrupted: partial result</strong>"));
    assert!(html.contains("Incomplete inputs"));

    // A report of complete results has no such table and no notes.
    let dir = work.path().join("r2");
    let ran = common::csdchar(&[
        "report",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
        &complete,
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(!ran.stderr.contains("note:"), "{}", ran.stderr);
    assert!(!dir.join("tables/incomplete.csv").exists());
}

/// A TPC-C fixture's steps as JSON.
fn tpcc_steps(rel: &str) -> Vec<serde_json::Value> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(rel)).unwrap()).unwrap();
    v["steps"].as_array().unwrap().clone()
}

/// One type's entry of a fixture step.
fn of_type<'a>(step: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    step["by_type"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {step}"))
}

/// New-Orders per minute of a fixture step, from its counts (not its tpmc field).
fn new_orders_per_minute(step: &serde_json::Value) -> f64 {
    of_type(step, "new_order")["transactions"].as_f64().unwrap() * 60.0
        / step["elapsed_s"].as_f64().unwrap()
}

#[test]
fn tpcc_results_get_tpmc_tables_a_comparison_and_charts() {
    const TYPES: [&str; 5] = [
        "new_order",
        "payment",
        "order_status",
        "delivery",
        "stock_level",
    ];
    for rel in ["tpcc-ssd/db-tpcc.json", "tpcc-csd/db-tpcc.json"] {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(fixture(rel)).unwrap()).unwrap();
        common::assert_matches_schema(&v, "db");
        assert_eq!(v["spec"]["workload"], "tpcc");
    }
    let out = tmp();
    let dir = out.path().join("r");
    let ssd = format!("ssd={}", fixture("tpcc-ssd"));
    let csd = format!("csd={}", fixture("tpcc-csd"));
    let ran = common::csdchar(&[
        "report",
        "--out",
        dir.to_str().unwrap(),
        "--label",
        &ssd,
        "--label",
        &csd,
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains("TPC-C: csd vs ssd"), "{}", ran.stdout);

    // The tpcc table: one row per label × terminals, every figure from the steps.
    let tpcc = read_table(&dir.join("tables/tpcc.csv"));
    assert_eq!(tpcc.len(), 6, "{tpcc:?}");
    for (label, rel) in [
        ("ssd", "tpcc-ssd/db-tpcc.json"),
        ("csd", "tpcc-csd/db-tpcc.json"),
    ] {
        for step in tpcc_steps(rel) {
            let terminals = step["threads"].to_string();
            let r = tpcc
                .iter()
                .find(|r| r["label"] == label && r["terminals"] == terminals)
                .unwrap_or_else(|| panic!("no row {label}/{terminals} in {tpcc:?}"));
            assert_eq!(r["warehouses"], "10");
            assert_eq!(r["fillfactor"], "BenchmarkSQL's per table");
            let secs = step["elapsed_s"].as_f64().unwrap();
            let tx = step["transactions"].as_f64().unwrap();
            assert!(close(num(r, "tpmC"), new_orders_per_minute(&step)), "{r:?}");
            assert!(close(num(r, "tpmTOTAL"), tx * 60.0 / secs), "{r:?}");
            assert!(close(num(r, "tps"), tx / secs), "{r:?}");
            let no = of_type(&step, "new_order");
            assert!(close(
                num(r, "new_order rollback %"),
                100.0 * no["rollbacks"].as_f64().unwrap() / no["transactions"].as_f64().unwrap()
            ));
            for name in TYPES {
                let t = of_type(&step, name);
                let lat = &t["latency"];
                let pct = |p: f64| {
                    lat["percentiles"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|x| x["percentile"].as_f64() == Some(p))
                        .unwrap()["value_ns"]
                        .as_f64()
                        .unwrap()
                        / 1e6
                };
                let ms = lat["mean_ns"].as_f64().unwrap() / 1e6;
                assert!(
                    close(num(r, &format!("{name} avg ms")), ms),
                    "{name}: {r:?}"
                );
                assert!(close(num(r, &format!("{name} p95 ms")), pct(95.0)), "{r:?}");
                assert!(close(num(r, &format!("{name} p99 ms")), pct(99.0)), "{r:?}");
                assert!(close(
                    num(r, &format!("{name} share %")),
                    100.0 * t["transactions"].as_f64().unwrap() / tx
                ));
            }
        }
    }
    // The seed study's figures at 8 terminals.
    let at8 = |label: &str| {
        tpcc.iter()
            .find(|r| r["label"] == label && r["terminals"] == "8")
            .unwrap()
    };
    assert!(close(num(at8("ssd"), "tpmC"), 28731.0));
    assert!(close(num(at8("csd"), "tpmC"), 33757.0));
    // New-Order and Payment latency are shown; the other types are in the CSV only.
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let section = md
        .split("## ")
        .find(|s| s.starts_with("TPC-C: tpmC"))
        .expect("tpcc section in report.md");
    assert!(section.contains("| new_order p95 ms |"), "{section}");
    assert!(section.contains("payment p99 ms"), "{section}");
    assert!(!section.contains("stock_level avg ms"), "{section}");
    assert!(
        section.contains("| ssd | 10 | procedures | BenchmarkSQL's per table | 8 | 28,731.00 |"),
        "{section}"
    );

    // The comparison: tpmC A | tpmC B | change %, per terminal count.
    let cmp = read_table(&dir.join("tables/tpcc-compare-csd-vs-ssd.csv"));
    assert_eq!(cmp.len(), 3, "{cmp:?}");
    let (ssd_steps, csd_steps) = (
        tpcc_steps("tpcc-ssd/db-tpcc.json"),
        tpcc_steps("tpcc-csd/db-tpcc.json"),
    );
    for (a, b) in ssd_steps.iter().zip(&csd_steps) {
        let r = cmp
            .iter()
            .find(|r| r["terminals"] == a["threads"].as_u64().unwrap().to_string())
            .unwrap();
        let (ta, tb) = (new_orders_per_minute(a), new_orders_per_minute(b));
        assert!(close(num(r, "tpmC ssd"), ta), "{r:?}");
        assert!(close(num(r, "tpmC csd"), tb), "{r:?}");
        assert!(
            close(num(r, "tpmC change %"), (tb / ta - 1.0) * 100.0),
            "{r:?}"
        );
        let p95 = |s: &serde_json::Value| {
            of_type(s, "new_order")["latency"]["percentiles"][1]["value_ns"]
                .as_f64()
                .unwrap()
                / 1e6
        };
        assert!(close(
            num(r, "new_order p95 ms change %"),
            (p95(b) / p95(a) - 1.0) * 100.0
        ));
    }
    // 33,757 against 28,731: +17.5%, as the seed study reported.
    assert!(
        md.contains(
            "| 10 | procedures | BenchmarkSQL's per table | 8 | 28,731.00 | 33,757.00 | +17.5% |"
        ),
        "{md}"
    );

    // TPC-C runs are database runs too: the summary and comparison keep working.
    let summary = read_table(&dir.join("tables/db-summary.csv"));
    assert_eq!(summary.len(), 6);
    for step in &ssd_steps {
        let r = row(&summary, "ssd", &step["threads"].to_string());
        assert_eq!(r["workload"], "tpcc");
        assert!(
            close(num(r, "tps avg"), step["tps"].as_f64().unwrap()),
            "{r:?}"
        );
    }
    assert!(dir.join("tables/compare-csd-vs-ssd.csv").exists());

    // Charts: tpmC by terminals and latency by type, SVG and PNG, on the page.
    let plots = plot_names(&dir);
    for stem in ["tpcc-tpmc-10w-100", "tpcc-latency-10w-100-8t"] {
        for ext in ["svg", "png"] {
            assert!(
                plots.contains(&format!("{stem}.{ext}")),
                "{stem}.{ext}: {plots:?}"
            );
        }
    }
    assert_pngs_match_svgs(&dir);
    let tpmc = std::fs::read_to_string(dir.join("plots/tpcc-tpmc-10w-100.svg")).unwrap();
    for text in ["terminals", "tpmC (New-Orders per minute)", "ssd", "csd"] {
        assert!(tpmc.contains(text), "{text} missing from the tpmC chart");
    }
    // Terminals are evenly spaced categories: 1, 4 and 8 labelled, nothing between.
    for t in ["1", "4", "8"] {
        assert!(
            tpmc.contains(&format!("\n{t}\n")),
            "terminals {t} not labelled"
        );
    }
    assert!(!tpmc.contains("\n6\n"), "a linear terminals axis");
    let lat = std::fs::read_to_string(dir.join("plots/tpcc-latency-10w-100-8t.svg")).unwrap();
    for text in TYPES
        .iter()
        .chain(&["p95 latency (ms)", "p99 latency (ms)", "ssd", "csd"])
    {
        assert!(lat.contains(text), "{text} missing from the latency chart");
    }
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for id in ["tpcc-tpmc-10w-100", "tpcc-latency-10w-100-8t", "tpcc"] {
        assert!(
            html.contains(&format!("id=\"{id}\"")),
            "{id} not on the page"
        );
    }
    assert!(html.contains("TPC-C: csd vs ssd"));
    let svg_files = plots.iter().filter(|p| p.ends_with(".svg")).count();
    assert_eq!(html.matches("<svg").count(), svg_files);
}

/// A pgio fixture as JSON.
fn pgio_fixture(rel: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(rel)).unwrap()).unwrap()
}

/// An optional number of a fixture's `io` object.
fn io_f64(io: &serde_json::Value, field: &str) -> Option<f64> {
    io.get(field).and_then(|v| v.as_f64())
}

/// Runs `csdchar report` on the two pgio fixtures (disk first: the baseline).
fn report_pgio() -> (tempfile::TempDir, PathBuf, common::Ran) {
    let out = tmp();
    let dir = out.path().join("r");
    let disk = format!("disk={}", fixture("pgio-disk"));
    let zram = format!("zram={}", fixture("pgio-zram"));
    let ran = common::csdchar(&[
        "report",
        "--out",
        dir.to_str().unwrap(),
        "--label",
        &disk,
        "--label",
        &zram,
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    (out, dir, ran)
}

#[test]
fn pgio_results_get_an_io_table_a_comparison_and_riops_charts() {
    const FIXTURES: [(&str, &str); 2] = [
        ("disk", "pgio-disk/db-pgio.json"),
        ("zram", "pgio-zram/db-pgio.json"),
    ];
    for (_, rel) in FIXTURES {
        let v = pgio_fixture(rel);
        common::assert_matches_schema(&v, "db");
        assert_eq!(v["spec"]["workload"], "pgio");
        assert!(v["spec"]["pgio"].is_object());
    }
    let (_out, dir, ran) = report_pgio();
    assert!(ran.stdout.contains("Database I/O"), "{}", ran.stdout);
    assert!(
        ran.stdout.contains("pgio I/O: zram vs disk"),
        "{}",
        ran.stdout
    );

    // The io table: one row per label × threads, every figure from the steps' io.
    let io = read_table(&dir.join("tables/io.csv"));
    assert_eq!(io.len(), 4, "{io:?}");
    for (label, rel) in FIXTURES {
        let v = pgio_fixture(rel);
        let p = &v["spec"]["pgio"];
        let config = format!(
            "{} schemas x {} blocks; {}% updates; work unit {}/{}",
            p["schemas"],
            p["blocks_per_schema"],
            p["update_pct"],
            p["work_unit"],
            p["update_work_unit"]
        );
        for step in v["steps"].as_array().unwrap() {
            let r = row(&io, label, &step["threads"].to_string());
            let sio = &step["io"];
            assert_eq!(r["workload"], "pgio");
            assert_eq!(r["config"], config, "{r:?}");
            assert_eq!(
                r["cache control"],
                v["spec"]["cache_control"].as_str().unwrap()
            );
            let riops = io_f64(sio, "riops").unwrap();
            let dev = io_f64(sio, "dev_read_iops").unwrap();
            assert!(close(num(r, "RIOPS"), riops), "{r:?}");
            assert!(close(num(r, "hits/s"), io_f64(sio, "hits_per_s").unwrap()));
            assert!(close(num(r, "dev read IOPS"), dev), "{r:?}");
            assert!(close(
                num(r, "dev read MiB/s"),
                io_f64(sio, "dev_read_bytes_per_s").unwrap() / 1048576.0
            ));
            assert!(close(
                num(r, "dev read lat ms"),
                io_f64(sio, "dev_read_latency_ms").unwrap()
            ));
            // What the page cache absorbed: device reads per miss.
            assert!(close(num(r, "dev reads/miss"), dev / riops), "{r:?}");
            assert!(close(
                num(r, "dev write IOPS"),
                io_f64(sio, "dev_write_iops").unwrap()
            ));
            assert!(close(
                num(r, "dev write lat ms"),
                io_f64(sio, "dev_write_latency_ms").unwrap()
            ));
            // Logical/physical bytes: zram has the counters, the disk does not.
            match io_f64(sio, "physical_bytes") {
                Some(b) => {
                    assert!(close(num(r, "physical"), b), "{r:?}");
                    assert!(close(
                        num(r, "logical"),
                        io_f64(sio, "logical_bytes").unwrap()
                    ));
                    assert!(close(
                        num(r, "physical change"),
                        io_f64(sio, "physical_delta_bytes").unwrap()
                    ));
                }
                None => {
                    assert_eq!(label, "disk");
                    assert_eq!(r["physical"], "", "{r:?}");
                    assert_eq!(r["logical"], "", "{r:?}");
                }
            }
        }
    }
    // Shown outside the CSV: the bytes (zram has them), not the write latency.
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let section = md
        .split("## ")
        .find(|s| s.starts_with("Database I/O"))
        .expect("io section in report.md");
    assert!(section.contains("| dev reads/miss |"), "{section}");
    assert!(section.contains("| physical |"), "{section}");
    assert!(section.contains("1.00 GiB"), "{section}");
    assert!(!section.contains("dev write lat ms"), "{section}");

    // The comparison: RIOPS and device read latency, disk | zram | change %.
    let cmp = read_table(&dir.join("tables/pgio-compare-zram-vs-disk.csv"));
    assert_eq!(cmp.len(), 2, "{cmp:?}");
    let (disk, zram) = (pgio_fixture(FIXTURES[0].1), pgio_fixture(FIXTURES[1].1));
    for (a, b) in disk["steps"]
        .as_array()
        .unwrap()
        .iter()
        .zip(zram["steps"].as_array().unwrap())
    {
        let threads = a["threads"].to_string();
        let r = cmp
            .iter()
            .find(|r| r["threads"] == threads)
            .unwrap_or_else(|| panic!("no {} threads in {cmp:?}", a["threads"]));
        let (ra, rb) = (
            io_f64(&a["io"], "riops").unwrap(),
            io_f64(&b["io"], "riops").unwrap(),
        );
        assert!(close(num(r, "RIOPS disk"), ra), "{r:?}");
        assert!(close(num(r, "RIOPS zram"), rb), "{r:?}");
        assert!(
            close(num(r, "RIOPS change %"), (rb / ra - 1.0) * 100.0),
            "{r:?}"
        );
        let (la, lb) = (
            io_f64(&a["io"], "dev_read_latency_ms").unwrap(),
            io_f64(&b["io"], "dev_read_latency_ms").unwrap(),
        );
        assert!(
            close(num(r, "dev read lat ms change %"), (lb / la - 1.0) * 100.0),
            "{r:?}"
        );
        assert!(
            num(r, "dev read lat ms change %") < -90.0,
            "zram reads faster"
        );
    }
    assert!(md.contains("## pgio I/O: zram vs disk"), "{md}");

    // The charts: RIOPS and device read IOPS over time per label, SVG and PNG.
    let plots = plot_names(&dir);
    let stems = [
        "pgio-riops-disk-4x4096-u10-w255-8",
        "pgio-riops-zram-4x4096-u10-w255-8",
    ];
    for stem in stems {
        for ext in ["svg", "png"] {
            assert!(
                plots.contains(&format!("{stem}.{ext}")),
                "{stem}.{ext}: {plots:?}"
            );
        }
        let svg = std::fs::read_to_string(dir.join(format!("plots/{stem}.svg"))).unwrap();
        for text in [
            "RIOPS (buffer misses/s)",
            "device read IOPS",
            "4, 8 clients",
        ] {
            assert!(svg.contains(text), "{text} missing from {stem}");
        }
    }
    assert_pngs_match_svgs(&dir);
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for id in stems.iter().chain(&["io", "pgio-compare-zram-vs-disk"]) {
        assert!(
            html.contains(&format!("id=\"{id}\"")),
            "{id} not on the page"
        );
    }
    let svg_files = plots.iter().filter(|p| p.ends_with(".svg")).count();
    assert_eq!(html.matches("<svg").count(), svg_files);

    // The interval export carries the io columns, sample by sample.
    let csv = std::fs::read_to_string(dir.join("intervals.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|c| *c == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let samples: Vec<serde_json::Value> = [&disk, &zram]
        .iter()
        .flat_map(|v| v["steps"].as_array().unwrap().clone())
        .flat_map(|s| s["intervals"].as_array().unwrap().clone())
        .collect();
    assert_eq!(rows.len(), samples.len());
    for (r, iv) in rows.iter().zip(&samples) {
        for (column, field) in [
            ("riops", "riops"),
            ("dev_read_iops", "dev_read_iops"),
            ("dev_read_latency_ms", "dev_read_latency_ms"),
            ("reads_per_miss", "reads_per_miss"),
        ] {
            let got: f64 = r[col(column)].parse().unwrap();
            assert!(
                close(got, io_f64(&iv["io"], field).unwrap()),
                "{column}: {r:?}"
            );
        }
    }
    let parquet = std::fs::read(dir.join("intervals.parquet")).unwrap();
    for name in ["riops", "dev_read_latency_ms", "reads_per_miss"] {
        assert!(
            parquet.windows(name.len()).any(|w| w == name.as_bytes()),
            "{name} not in the Parquet schema"
        );
    }
}

/// Issue 30: a TPC-C run without one fillfactor is "BenchmarkSQL's per table"
/// in every table of the report, the I/O table included.
#[test]
fn a_tpcc_run_has_one_fillfactor_label_in_every_table() {
    let dir = tempfile::tempdir().unwrap();
    let read = |rel: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(fixture(rel)).unwrap()).unwrap()
    };
    let mut tpcc = read("tpcc-ssd/db-tpcc.json");
    let pgio = read("pgio-zram/db-pgio.json");
    assert!(tpcc["spec"]["fillfactor"].is_null());
    let io = pgio["steps"][0]["io"].clone();
    assert!(io.is_object(), "the pgio fixture has I/O figures");
    for step in tpcc["steps"].as_array_mut().unwrap() {
        step["io"] = io.clone();
    }
    let input = dir.path().join("db-tpcc.json");
    std::fs::write(&input, serde_json::to_vec(&tpcc).unwrap()).unwrap();
    let out = dir.path().join("out");
    let ran = common::csdchar(&[
        "report",
        "-q",
        "--out",
        out.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("fillfactor BenchmarkSQL's per table"), "{md}");
    assert!(!md.contains("100 (default)"), "{md}");
}
