//! pgbench custom scripts through `csdchar db run -f …`, checked against pgbench 15 itself
//! on the same cluster: the rows the scripts write (every variable, function, meta-command
//! and mode leaves its values in them), the server's statement profile
//! (pg_stat_statements), transaction, failure and retry counts, aborted clients, and bad
//! scripts refused before connecting.

use std::path::Path;

use csdchar_pgcluster::{ClusterSpec, ManagedCluster};

use crate::common::{self, csdchar, psql};

crate::on_uring_too!();

/// A cluster with pg_stat_statements and the tables the scripts write.
fn cluster() -> ManagedCluster {
    let c = ManagedCluster::start(&ClusterSpec {
        settings: vec![
            "shared_preload_libraries=pg_stat_statements".into(),
            "pg_stat_statements.track_utility=on".into(),
            "max_connections=40".into(),
            "deadlock_timeout=50ms".into(),
        ],
        ..ClusterSpec::default()
    })
    .unwrap();
    psql(&c, "CREATE EXTENSION pg_stat_statements");
    psql(
        &c,
        "CREATE TABLE log (id bigserial, client int, script int, a text, b text, c text, d text, \
         e text, f text, g text, h text, tag text, m text, n text); \
         CREATE TABLE counter (id int primary key, v bigint); \
         INSERT INTO counter VALUES (1, 0), (2, 0)",
    );
    c
}

fn pgbench_bin() -> Option<std::path::PathBuf> {
    let p = Path::new("/usr/lib/postgresql/15/bin/pgbench");
    p.exists().then(|| p.to_path_buf())
}

/// Runs pgbench on the cluster with `args`; returns (exit code, stdout + stderr).
fn pgbench(c: &ManagedCluster, args: &[&str]) -> (i32, String) {
    let out = c
        .client("pgbench")
        .args(["-n", "-d", "postgres"])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Runs `csdchar db run --url … --output-format json ARGS`; returns (exit, result or null, stderr).
fn run(c: &ManagedCluster, args: &[&str]) -> (i32, serde_json::Value, String) {
    let url = c.conninfo("postgres");
    let mut all = vec![
        "db",
        "run",
        "--url",
        url.as_str(),
        "--output-format",
        "json",
        "--report-interval",
        "0",
    ];
    all.extend_from_slice(args);
    let ran = csdchar(&all);
    let v = serde_json::from_str(&ran.stdout).unwrap_or(serde_json::Value::Null);
    (ran.outcome.exit_code, v, ran.stderr)
}

fn rows(c: &ManagedCluster) -> String {
    psql(
        c,
        "SELECT coalesce(string_agg(concat_ws(',', client, script, a, b, c, d, e, f, g, h, tag, m, n), \
         ';' ORDER BY client, id), '') FROM log",
    )
}

/// The script statements' profile: (query, calls) of the statements marked `/*s*/`.
fn profile(c: &ManagedCluster) -> String {
    psql(
        c,
        "SELECT coalesce(string_agg(calls || ' ' || query, E'\\n' ORDER BY query), '') \
         FROM pg_stat_statements WHERE query LIKE '%/*s*/%'",
    )
}

fn reset(c: &ManagedCluster) {
    psql(
        c,
        "TRUNCATE log; UPDATE counter SET v = 0; SELECT pg_stat_statements_reset()",
    );
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// Every function and most meta-commands, their values written into `log`.
const MAIN: &str = r#"-- a user's script
\set a random(1, 1000) + :region
\set b random_zipfian(1, 100, 1.5) * 2 % 7
\set c hash(:a, 5) % 1000 + hash_fnv1a(:a) % 3 + hash_murmur2(:a, 3) % 2
\set d permute(:a, 1000) + permute(:a, 10, 77)
\set e random_gaussian(1, 100, 2.5) + random_exponential(1, 100, 3.0) + random(-5, 5)
\set f greatest(:a, :b, 5.5) + least(1, 2.0) + abs(-3) + int(2.5) + sqrt(16) + pow(2, 3) + power(2, 0.5) + ln(1) + exp(0) + pi() * 0 + double(:a) / 3 + mod(:a, 7) + (:a & 15) + (:a | 1) + (:a # 3) + (1 << 3) + (256 >> 2) + ~:a
\set tag case when :a % 2 = 0 then 1 else 2 end
\setshell g echo :a
\shell true
\if :a > 700
\set tag :tag * 10
\elif :a > 350 and not (:b is null)
\set tag :tag * 100
\else
\set tag :tag * 1000
\endif
SELECT /*s*/ :a::int + 1 AS h, 'x' AS k \gset q_
\sleep 50 us
INSERT /*s*/ INTO log (client, script, a, b, c, d, e, f, g, h, tag) VALUES (:client_id, 1, :a, :b, :c, :d, :e, :f, :g, :q_h, :tag);
"#;

/// A pipeline (extended and prepared only).
const PIPELINE: &str = r#"\set x random(1, 10)
\startpipeline
INSERT /*s*/ INTO log (client, script, a) VALUES (:client_id, 2, :x);
SELECT /*s*/ :x::int;
UPDATE /*s*/ counter SET v = v + :x WHERE id = 1;
\endpipeline
"#;

/// \aset over a compound (simple only: `\;` cannot be prepared).
const COMPOUND: &str = r#"\set x random(1, 10)
SELECT /*s*/ 1 AS m \; SELECT :x AS n \aset
BEGIN;
INSERT /*s*/ INTO log (client, script, a, m, n) VALUES (:client_id, 2, :x, :m, :n);
END;
"#;

#[test]
fn scripts_send_and_count_what_pgbench_does_in_every_mode() {
    if !common::postgres_or_skip() {
        return;
    }
    let Some(_) = pgbench_bin() else {
        eprintln!("skipped: pgbench 15 is not installed");
        return;
    };
    let c = cluster();
    let dir = tempfile::tempdir().unwrap();
    let main = write(dir.path(), "main.sql", MAIN);
    let pipeline = write(dir.path(), "pipeline.sql", PIPELINE);
    let compound = write(dir.path(), "compound.sql", COMPOUND);
    for mode in ["simple", "extended", "prepared"] {
        let second = if mode == "simple" {
            &compound
        } else {
            &pipeline
        };
        let f1 = format!("{main}@3");
        let f2 = format!("{second}@1");
        let common_args = [
            "-f",
            f1.as_str(),
            "-f",
            f2.as_str(),
            "-D",
            "region=3",
            "-M",
            mode,
            "-c",
            "3",
            "-t",
            "12",
            "--random-seed",
            "5432",
        ];
        reset(&c);
        let mut pa = common_args.to_vec();
        pa.extend(["-j", "3"]);
        let (code, text) = pgbench(&c, &pa);
        assert_eq!(code, 0, "{mode}: pgbench: {text}");
        let (want_rows, want_profile) = (rows(&c), profile(&c));
        let want_counter = psql(&c, "SELECT v FROM counter WHERE id = 1");
        assert_eq!(want_rows.split(';').count(), 36, "{mode}: {want_rows}");
        assert!(
            want_profile.contains("INSERT /*s*/") && want_profile.contains("SELECT /*s*/"),
            "{mode}: {want_profile}"
        );
        assert!(
            text.contains("number of transactions actually processed: 36/36"),
            "{text}"
        );

        reset(&c);
        let (code, result, err) = run(&c, &common_args);
        assert_eq!(code, 0, "{mode}: {err}");
        assert_eq!(
            rows(&c),
            want_rows,
            "{mode}: the rows differ from pgbench's"
        );
        assert_eq!(
            profile(&c),
            want_profile,
            "{mode}: the statement profile differs from pgbench's"
        );
        assert_eq!(
            psql(&c, "SELECT v FROM counter WHERE id = 1"),
            want_counter,
            "{mode}"
        );
        let step = &result["steps"][0];
        assert_eq!(step["transactions"], 36, "{mode}: {step}");
        let sc = &step["script"];
        let scripts = sc["scripts"].as_array().unwrap();
        assert_eq!(scripts.len(), 2);
        let n: u64 = scripts
            .iter()
            .map(|s| s["transactions"].as_u64().unwrap())
            .sum();
        assert_eq!(n, 36);
        // -r: every command of the first script has a line; the INSERT ran once per
        // transaction of that script.
        let cmds = scripts[0]["commands"].as_array().unwrap();
        let insert = cmds
            .iter()
            .find(|c| c["text"].as_str().unwrap().starts_with("INSERT"))
            .unwrap();
        assert_eq!(insert["executions"], scripts[0]["transactions"], "{mode}");
        assert_eq!(result["spec"]["script"]["query_mode"], mode);
        assert_eq!(result["spec"]["script"]["random_seed"], 5432);
        common::assert_matches_schema(&result, "db");
        if mode == "prepared" {
            // The report shows -r's statements of the result.
            let file = dir.path().join("r.json");
            std::fs::write(&file, serde_json::to_vec(&result).unwrap()).unwrap();
            let out = dir.path().join("report");
            let ran = csdchar(&[
                "report",
                file.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
                "-q",
            ]);
            assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
            let csv = std::fs::read_to_string(out.join("tables/script_statements.csv")).unwrap();
            assert!(csv.contains("INSERT /*s*/ INTO log"), "{csv}");
            assert!(csv.contains("\\startpipeline"), "{csv}");
        }
    }
}

#[test]
fn retries_resend_the_same_values_and_failures_are_counted() {
    if !common::postgres_or_skip() {
        return;
    }
    let c = cluster();
    let dir = tempfile::tempdir().unwrap();
    // Repeatable read on one row, with a pause inside: concurrent clients fail with 40001.
    let ser = write(
        dir.path(),
        "ser.sql",
        "\\set delta random(1, 5)\n\
         BEGIN ISOLATION LEVEL REPEATABLE READ;\n\
         SELECT v FROM counter WHERE id = 1;\n\
         \\sleep 2 ms\n\
         UPDATE counter SET v = v + :delta WHERE id = 1;\n\
         INSERT INTO log (client, script, a) VALUES (:client_id, 1, :delta);\n\
         END;\n",
    );
    reset(&c);
    let (code, r, err) = run(
        &c,
        &[
            "-f",
            &ser,
            "-c",
            "4",
            "-t",
            "10",
            "--max-tries",
            "1000",
            "--random-seed",
            "7",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let step = &r["steps"][0];
    let sc = &step["script"];
    assert_eq!(step["transactions"], 40, "{step}");
    assert!(
        sc["retries"].as_u64().unwrap() > 0,
        "no retry happened: {sc}"
    );
    assert!(sc["retried"].as_u64().unwrap() <= sc["retries"].as_u64().unwrap());
    assert_eq!(sc["serialization_failures"], 0);
    // Each committed transaction added the delta it logged: retries redrew the same value.
    assert_eq!(
        psql(&c, "SELECT v FROM counter WHERE id = 1"),
        psql(&c, "SELECT sum(a::int) FROM log")
    );
    assert_eq!(psql(&c, "SELECT count(*) FROM log"), "40");
    // The retries are counted on the command that failed: the UPDATE.
    let cmds = sc["scripts"][0]["commands"].as_array().unwrap();
    let retried_at: u64 = cmds
        .iter()
        .filter(|c| !c["text"].as_str().unwrap().starts_with("UPDATE"))
        .map(|c| c["retries"].as_u64().unwrap())
        .sum();
    assert_eq!(retried_at, 0, "{cmds:?}");

    // Without retries, a failure ends the transaction: counted as failed, not processed.
    reset(&c);
    let (code, r, err) = run(
        &c,
        &["-f", &ser, "-c", "4", "-t", "10", "--failures-detailed"],
    );
    assert_eq!(code, 0, "{err}");
    let step = &r["steps"][0];
    let failed = step["script"]["serialization_failures"].as_u64().unwrap();
    assert!(failed > 0, "{step}");
    assert_eq!(step["transactions"].as_u64().unwrap() + failed, 40);
    assert_eq!(step["errors"]["40001"].as_u64().unwrap(), failed);

    // Two clients taking two rows in opposite orders deadlock (40P01).
    let dl = write(
        dir.path(),
        "dl.sql",
        "\\set first 1 + :client_id % 2\n\\set second 2 - :client_id % 2\n\
         BEGIN;\n\
         UPDATE counter SET v = v + 1 WHERE id = :first;\n\
         \\sleep 20 ms\n\
         UPDATE counter SET v = v + 1 WHERE id = :second;\n\
         END;\n",
    );
    reset(&c);
    let (code, r, err) = run(&c, &["-f", &dl, "-c", "2", "-t", "5", "--max-tries", "20"]);
    assert_eq!(code, 0, "{err}");
    let step = &r["steps"][0];
    let sc = &step["script"];
    assert_eq!(step["transactions"], 10, "{step}");
    assert!(
        sc["retries"].as_u64().unwrap() > 0,
        "no deadlock retried: {sc}"
    );
    assert_eq!(
        psql(&c, "SELECT sum(v) FROM counter"),
        "20",
        "each committed transaction updated two rows once"
    );
}

#[test]
fn an_error_aborts_the_client_as_in_pgbench() {
    if !common::postgres_or_skip() {
        return;
    }
    let c = cluster();
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "bad.sql",
        "\\set x 1\nINSERT INTO log (client, script) VALUES (:client_id, 1);\nSELECT 1/0;\n",
    );
    reset(&c);
    let (code, r, err) = run(&c, &["-f", &bad, "-c", "2", "-t", "5"]);
    assert_eq!(code, 1, "an aborted run is not a success: {err}");
    let step = &r["steps"][0];
    assert_eq!(step["transactions"], 0);
    let aborted = step["script"]["aborted_clients"].as_array().unwrap();
    assert_eq!(aborted.len(), 2, "{aborted:?}");
    assert_eq!(aborted[0]["sqlstate"], "22012");
    assert!(
        aborted[0]["message"]
            .as_str()
            .unwrap()
            .contains("division by zero"),
        "{aborted:?}"
    );
    // The statements before the failing one ran, once per client.
    assert_eq!(psql(&c, "SELECT count(*) FROM log"), "2");
    if pgbench_bin().is_some() {
        reset(&c);
        let (code, text) = pgbench(&c, &["-f", &bad, "-c", "2", "-j", "2", "-t", "5"]);
        assert_eq!(code, 2, "{text}");
        assert!(text.contains("processed: 0/10"), "{text}");
        assert_eq!(psql(&c, "SELECT count(*) FROM log"), "2");
    }
    // --exit-on-abort (pgbench 18): the first abort ends the run, its result saved.
    let (code, r, err) = run(&c, &["-f", &bad, "-c", "2", "-t", "5", "--exit-on-abort"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--exit-on-abort"), "{err}");
    assert!(
        r["error"].as_str().unwrap().contains("division by zero"),
        "{r}"
    );
    // A script that leaves its block open: the transaction is counted, then the client aborts.
    let open = write(dir.path(), "open.sql", "BEGIN;\nSELECT 1;\n");
    let (code, r, err) = run(&c, &["-f", &open, "-c", "2", "-t", "5"]);
    assert_eq!(code, 1, "{err}");
    let step = &r["steps"][0];
    assert_eq!(step["transactions"], 2, "{step}");
    let aborted = step["script"]["aborted_clients"].as_array().unwrap();
    assert_eq!(aborted.len(), 2);
    assert!(
        aborted[0]["message"]
            .as_str()
            .unwrap()
            .contains("end of script reached without completing the last transaction"),
        "{aborted:?}"
    );
    if pgbench_bin().is_some() {
        let (code, text) = pgbench(&c, &["-f", &open, "-c", "2", "-j", "2", "-t", "5"]);
        assert_eq!(code, 2, "{text}");
        assert!(text.contains("processed: 2/10"), "{text}");
    }
}

#[test]
fn bad_scripts_are_refused_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens there: an exit 2 with the script's message means nothing connected.
    let url = "host=/nonexistent-csdchar port=1 user=nobody dbname=none";
    for (text, want) in [
        ("\\set x 1 +\n", "bad.sql:1:"),
        ("SELECT 1;\n\\nosuch 1\n", "bad.sql:2"),
        ("\\if true\nSELECT 1;\n", "\\if without matching \\endif"),
        ("\\sleep 2 fortnights\n", "bad.sql:1"),
        ("\\set x random(1)\n", "bad.sql:1:"),
        ("", "empty command list"),
    ] {
        let f = write(dir.path(), "bad.sql", text);
        let ran = csdchar(&["db", "run", "--url", url, "-f", &f]);
        assert_eq!(ran.outcome.exit_code, 2, "{text:?}: {}", ran.stderr);
        assert!(
            ran.stderr.contains(want),
            "{text:?}: want {want:?} in {}",
            ran.stderr
        );
        assert!(ran.stdout.is_empty());
    }
    for (args, want) in [
        (vec!["-f", "/nonexistent/x.sql"], "could not open file"),
        (vec!["-b", "nosuch"], "no builtin script found"),
        (vec!["-b", "s"], "ambiguous builtin name"),
        (vec!["-b", "select-only@x"], "invalid weight"),
        (
            vec!["-b", "select-only", "-D", "novalue"],
            "invalid variable definition",
        ),
        (
            vec!["-b", "select-only", "--random-seed", "soon"],
            "--random-seed",
        ),
        (vec!["-D", "a=1"], "--define: applies to pgbench scripts"),
        (vec!["-b", "select-only", "--reconnect"], "--reconnect"),
    ] {
        let mut all = vec!["db", "run", "--url", url];
        all.extend_from_slice(&args);
        let ran = csdchar(&all);
        assert_eq!(ran.outcome.exit_code, 2, "{args:?}: {}", ran.stderr);
        assert!(ran.stderr.contains(want), "{args:?}: {}", ran.stderr);
    }
}

/// Each client's log as (client, transaction_no, script_no) triples, and the field counts seen.
fn log_shape(dir: &Path, prefix: &str) -> (Vec<(u64, u64, u64)>, Vec<usize>) {
    let mut triples = Vec::new();
    let mut widths = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if !p.file_name().unwrap().to_str().unwrap().starts_with(prefix) {
            continue;
        }
        for line in std::fs::read_to_string(&p).unwrap().lines() {
            let f: Vec<&str> = line.split(' ').collect();
            widths.push(f.len());
            if f.len() >= 6 && f.len() < 15 {
                triples.push((
                    f[0].parse().unwrap(),
                    f[1].parse().unwrap(),
                    f[3].parse().unwrap(),
                ));
            }
        }
    }
    triples.sort();
    widths.sort();
    widths.dedup();
    (triples, widths)
}

#[test]
fn transaction_logs_follow_pgbench_s_formats() {
    if !common::postgres_or_skip() {
        return;
    }
    let Some(_) = pgbench_bin() else {
        eprintln!("skipped: pgbench 15 is not installed");
        return;
    };
    let c = cluster();
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.sql", "\\set x random(1, 9)\nSELECT :x;\n");
    let b = write(dir.path(), "b.sql", "SELECT 2;\n");
    let (fa, fb) = (format!("{a}@3"), format!("{b}@2"));
    for extra in [
        vec!["--max-tries", "3"],
        vec!["--sampling-rate", "0.3"],
        vec!["--aggregate-interval", "1"],
    ] {
        let logs = tempfile::tempdir().unwrap();
        let ours = logs.path().join("ours").display().to_string();
        let theirs = logs.path().join("theirs").display().to_string();
        // Aggregation is by time: a run of 2 s gives its whole intervals.
        let aggregate = extra[0] == "--aggregate-interval";
        let (how, much) = if aggregate { ("-T", "2") } else { ("-t", "40") };
        let mut args = vec![
            "-f",
            fa.as_str(),
            "-f",
            fb.as_str(),
            "-c",
            "2",
            how,
            much,
            "--random-seed",
            "11",
            "-l",
        ];
        args.extend_from_slice(&extra);
        let mut mine = args.clone();
        mine.extend(["--log-prefix", ours.as_str()]);
        let (code, _, err) = run(&c, &mine);
        assert_eq!(code, 0, "{extra:?}: {err}");
        let mut pa = args.clone();
        pa.extend(["-j", "2", "--log-prefix", theirs.as_str()]);
        let (code, text) = pgbench(&c, &pa);
        assert_eq!(code, 0, "{text}");
        let (t_ours, w_ours) = log_shape(logs.path(), "ours");
        let (t_theirs, w_theirs) = log_shape(logs.path(), "theirs");
        assert_eq!(w_ours, w_theirs, "{extra:?}: fields per line");
        // The same transactions (sampled alike), numbered alike, of the same scripts.
        assert_eq!(t_ours, t_theirs, "{extra:?}");
        if aggregate {
            assert_eq!(w_ours, [15], "{extra:?}");
        }
        if extra[0] == "--sampling-rate" {
            assert!(!t_ours.is_empty() && t_ours.len() < 80, "{}", t_ours.len());
        }
    }
}

#[test]
fn syncpipeline_of_pgbench_18_sends_both_parts() {
    if !common::postgres_or_skip() {
        return;
    }
    let c = cluster();
    let dir = tempfile::tempdir().unwrap();
    let s = write(
        dir.path(),
        "sync.sql",
        "\\startpipeline\n\
         INSERT INTO log (client, script, a) VALUES (:client_id, 1, 'first');\n\
         \\syncpipeline\n\
         INSERT INTO log (client, script, a) VALUES (:client_id, 1, 'second');\n\
         SELECT 1;\n\
         \\endpipeline\n",
    );
    for mode in ["extended", "prepared"] {
        reset(&c);
        let (code, r, err) = run(&c, &["-f", &s, "-M", mode, "-c", "2", "-t", "7"]);
        assert_eq!(code, 0, "{mode}: {err}");
        assert_eq!(r["steps"][0]["transactions"], 14, "{mode}");
        assert_eq!(
            psql(
                &c,
                "SELECT count(*) FILTER (WHERE a = 'first') || ',' || count(*) FILTER (WHERE a = 'second') FROM log"
            ),
            "14,14",
            "{mode}"
        );
    }
    // pgbench 15 has no \syncpipeline: refused before connecting under its rules.
    let ran = csdchar(&[
        "db",
        "run",
        "--url",
        "host=/nonexistent-csdchar port=1",
        "-f",
        &s,
        "--pgbench-version",
        "15",
    ]);
    assert_eq!(ran.outcome.exit_code, 2, "{}", ran.stderr);
    assert!(ran.stderr.contains("sync.sql:3"), "{}", ran.stderr);
}

/// A campaign step studies a user's script on its target: `file`, `script-init` and the
/// fillfactors given as the step's arguments, the result a study with the script's figures.
#[test]
fn a_campaign_studies_a_users_script() {
    if !common::postgres_or_skip() {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("csdchar-script-campaign")
        .tempdir_in("/var/tmp")
        .unwrap();
    let target = dir.path().join("disk");
    std::fs::create_dir(&target).unwrap();
    let init = write(
        dir.path(),
        "init.sql",
        "CREATE TABLE items (id int PRIMARY KEY, qty int, note text);\n\
         INSERT INTO items SELECT g, 0, md5(g::text) FROM generate_series(1, 20000) g;\n",
    );
    let script = write(
        dir.path(),
        "mine.sql",
        "\\set id random(1, 20000)\nUPDATE items SET qty = qty + 1 WHERE id = :id;\n",
    );
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        format!(
            r#"name = "script"

[targets.disk]
dir = "{}"

[[steps]]
command = "db study"
args = {{ file = "{script}@2", script-init = "{init}", fillfactor = "100,50", threads = 2, time = "1s", force = true }}
"#,
            target.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let ran = csdchar(&[
        "campaign",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let found: Vec<_> = std::fs::read_dir(out.join("disk"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&found[0]).unwrap()).unwrap();
    common::assert_matches_schema(&v, "study");
    assert_eq!(v["rows"].as_array().unwrap().len(), 2, "{v}");
    assert_eq!(v["spec"]["script"]["scripts"][0]["weight"], 2);
    for run in v["runs"].as_array().unwrap() {
        assert!(
            run["steps"][0]["transactions"].as_u64().unwrap() > 0,
            "{run}"
        );
    }
}
