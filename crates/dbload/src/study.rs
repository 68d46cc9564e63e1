//! The fillfactor study as a library call: per fillfactor, the tables loaded anew
//! (after [`WARMUP_LOADS`] unmeasured loads), space measured, the steps run, and
//! one row per fillfactor and thread count. It builds on the single steps of
//! [`crate::orchestrate`] (load, run, the observer and the errors), which know
//! nothing of it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use csdchar_core::result::ToolInfo;
use csdchar_core::result::study::{
    PhysicalSplit, STUDY_SCHEMA, Spread, StudyLoad, StudyResult, StudyRow, StudyRun,
    StudyUnfinished,
};

use crate::job::DbJob;
use crate::session::DbServer;
use crate::space::{SpaceEstimator, measure_space, settled_snapshot};
use csdchar_dbloop::event::Protocol;
use csdchar_workloads::catalog;

use crate::orchestrate::{
    DbNote, DbObserver, JobError, LoadError, Refusal, WARMUP_LOADS, check_room, ended, load,
    now_rfc3339, open_checked, run_steps,
};

/// The fillfactor study: per fillfactor, drop the tables, load them,
/// checkpoint, measure logical and physical space (the drive's counters, or
/// `estimator` where it has none), and run the steps; one row per fillfactor
/// and thread count. Existing tables are replaced only with `job.load.force`.
pub async fn study(
    server: &DbServer,
    job: &DbJob,
    observer: &mut dyn DbObserver,
    estimator: &dyn SpaceEstimator,
    interrupt: &Arc<AtomicBool>,
) -> Result<StudyResult, JobError<StudyResult>> {
    let (conninfo, dialect) = (server.conninfo.as_str(), &server.dialect);
    let bench = &job.bench;
    let started_at = now_rfc3339();
    let (client, version) = open_checked(conninfo, job).await?;
    let tables = bench.tables();
    let schema = job.schema.as_str();
    match catalog::existing_tables(&client, schema, &tables).await {
        Ok(t) if !t.is_empty() && !job.load.force => {
            return Err(JobError::Refused(Refusal::TablesExist {
                schema: schema.to_string(),
                tables: t,
            }));
        }
        Ok(_) => {}
        Err(e) => return Err(JobError::failed(e.message)),
    }
    let fillfactors = job.study_fillfactors();
    // The lowest fillfactor's load is the largest; the tables are replaced.
    let largest = bench.with_fillfactor(fillfactors.iter().copied().min().unwrap_or(100));
    check_room(server, job, &largest, true)
        .await
        .map_err(JobError::Refused)?;
    let mut rows: Vec<StudyRow> = Vec::new();
    let mut runs = Vec::new();
    let mut error = None;
    let mut protocol = None;
    // The drive's counters change by whatever the load writes, WAL included:
    // a first load adds new WAL segments, later ones overwrite recycled ones.
    // One unmeasured load at the lowest fillfactor (the most data, so the most
    // WAL) first puts the WAL in the steady state every measured load then
    // finds, whatever the server's WAL settings.
    let first = settled_snapshot(server, &client, &tables)
        .await
        .into_snapshot();
    let on_zfs = first.device.as_ref().is_some_and(|d| d.zfs.is_some());
    let counters = first
        .device
        .is_some_and(|d| d.physical_bytes.is_some() && d.logical_bytes.is_some());
    let on_btrfs = first
        .data_directory
        .as_deref()
        .is_some_and(|d| csdchar_devices::btrfs::is_btrfs(std::path::Path::new(d)));
    let warm_ff = fillfactors.iter().copied().min().unwrap_or(100);
    let wal_recycle: Option<String> = client
        .query_one("SHOW wal_recycle", &[])
        .await
        .ok()
        .map(|r| r.get(0));
    let physical_method = if counters {
        format!(
            "the relation files (heap, indexes, TOAST, free space and visibility maps){}, after CHECKPOINT and sync; beside it the drive's counters' change over each \
             load (settled: CHECKPOINT, a WAL switch and a second CHECKPOINT on a connection closed after, up to \
             6 s for server processes to close the WAL segments it removed, any still open held by csdchar until \
             measured, then sync until both counters hold still for 0.5 s), split into the relations, the WAL \
             directory (same model, its change, those held segments included) and the rest; {WARMUP_LOADS} unmeasured warm-up loads at \
             fillfactor {warm_ff} first{}",
            if on_zfs {
                " as ZFS allocated them (their blocks, compressed; the drive being the dataset's used and \
                 logical bytes, after its pool committed its transaction groups: zpool sync, or a property set \
                 and cleared where the version has no zpool sync)"
            } else {
                " compressed page by page with the drive's model"
            },
            match wal_recycle.as_deref() {
                Some("off") =>
                    "; WAL segments removed after each checkpoint, not recycled (wal_recycle=off), \
                     so a load's WAL leaves nothing behind on the drive"
                        .to_string(),
                Some(v) => format!(
                    "; the server recycles WAL segments (wal_recycle={v}), so the drive's total also holds how \
                     the WAL directory's content changed (the split's WAL part)"
                ),
                None => String::new(),
            }
        )
    } else if on_btrfs {
        "the relation files as btrfs stores them, after CHECKPOINT and sync; where csdchar may not search \
         the file system's trees (not root), deflate-fixed per 4 KiB of the files, estimated"
            .to_string()
    } else {
        "estimated: deflate-fixed per 4 KiB of the workload's relation files (no compressing drive's counters)"
            .to_string()
    };
    let repeat = job.study_repeat.max(1);
    let warmup_loads = if counters { WARMUP_LOADS } else { 0 };
    let steps_in_all = fillfactors.len() * job.run.threads.len();
    let step_s = (job.run.warmup + job.run.time).as_secs_f64();
    observer.note(&DbNote::StudyPlan {
        fillfactors: fillfactors.len(),
        repeat,
        warmup_loads,
        run_steps: steps_in_all,
        step_s,
    });
    let all_loads = warmup_loads + fillfactors.len() * repeat as usize;
    let study_t0 = Instant::now();
    // Said once, after the first load of the study (warm-up or measured).
    let mut said = false;
    let mut estimate = move |observer: &mut dyn DbObserver, first_load_s: f64| {
        if std::mem::replace(&mut said, true) {
            return;
        }
        let before_it = study_t0.elapsed().as_secs_f64() - first_load_s;
        observer.note(&DbNote::StudyEstimate {
            first_load_s,
            loads: all_loads,
            total_s: before_it + first_load_s * all_loads as f64 + step_s * steps_in_all as f64,
        });
    };
    if counters && !interrupt.load(Ordering::Relaxed) {
        observer.warmup_started(WARMUP_LOADS, warm_ff);
        let warm = bench.with_fillfactor(warm_ff);
        let mut end = Ok(());
        for _ in 0..WARMUP_LOADS {
            end = match warm.drop_tables(conninfo, schema).await {
                Ok(_) => load(server, job, &warm, true, observer, interrupt)
                    .await
                    .map(|r| estimate(observer, r.elapsed_s)),
                Err(e) => {
                    observer.failed(&e);
                    Err(LoadError::Failed(e))
                }
            };
            if end.is_err() {
                break;
            }
            // Its checkpoint recycles the segments the load filled.
            let _ = settled_snapshot(server, &client, &tables).await;
        }
        match end {
            // The load said how far it got; the study's (empty) result follows.
            Ok(()) | Err(LoadError::Interrupted { .. }) => {}
            Err(_) => error = Some(server.name_fault("the warm-up load failed")),
        }
    }
    let mut unfinished = None;
    for &ff in &fillfactors {
        if interrupt.load(Ordering::Relaxed) || error.is_some() {
            break;
        }
        let b = bench.with_fillfactor(ff);
        // What of this fillfactor was cut short, if anything.
        let mut stopped_in = None;
        // Each measured load of this fillfactor (--repeat): the row holds their mean.
        let mut loads: Vec<StudyLoad> = Vec::new();
        let mut source = String::new();
        let mut estimated = false;
        let mut data_directory_bytes = None;
        for n in 1..=repeat {
            let this = format!("load {n} of {repeat}");
            if interrupt.load(Ordering::Relaxed) {
                stopped_in = Some(format!("{this} (interrupted before it started)"));
                break;
            }
            // The drive's baseline without the workload's tables: what the load adds is measured against it.
            if let Err(e) = b.drop_tables(conninfo, schema).await {
                error = Some(e);
                stopped_in = Some(format!("{this} (failed)"));
                break;
            }
            let settled = settled_snapshot(server, &client, &tables).await;
            let wal_before = settled.snapshot.device.as_ref().and_then(|d| {
                let model = crate::space::DriveModel::of_snapshot(d);
                crate::space::wal_physical(&settled, &model, estimator, interrupt)
            });
            // The held segments go now: the load's change includes their removal.
            let base = settled.into_snapshot();
            let wal_dir_before = crate::snapshot::wal_dir_bytes(&client, dialect).await;
            let t0 = Instant::now();
            match load(server, job, &b, true, observer, interrupt).await {
                Ok(_) => {}
                Err(LoadError::Interrupted { .. }) => {
                    stopped_in = Some(format!("{this} (interrupted)"));
                    break;
                }
                Err(_) => {
                    error = Some(server.name_fault(&format!("loading at fillfactor {ff} failed")));
                    stopped_in = Some(format!("{this} (failed)"));
                    break;
                }
            }
            let load_s = t0.elapsed().as_secs_f64();
            estimate(observer, load_s);
            let space = measure_space(
                server,
                &client,
                &tables,
                base.device.as_ref(),
                wal_before,
                estimator,
                interrupt,
            )
            .await;
            let wal_dir_after = crate::snapshot::wal_dir_bytes(&client, dialect).await;
            source = space.source.clone();
            estimated = space.estimated;
            data_directory_bytes = space.data_directory_bytes;
            loads.push(StudyLoad {
                load_s,
                relation_bytes: space.relation_bytes,
                physical_bytes: space.physical,
                physical_of_logical_bytes: space.of_logical,
                physical_split: space.split,
                load_wal_bytes: base
                    .wal_lsn_bytes
                    .zip(space.wal_lsn_bytes)
                    .map(|(a, b)| b - a),
                wal_dir_growth_bytes: wal_dir_before.zip(wal_dir_after).map(|(a, b)| b - a),
            });
        }
        // Stopped before its run: the loads that finished are kept, and what was cut said.
        let stopped_in = match stopped_in {
            Some(s) => Some(s),
            None if interrupt.load(Ordering::Relaxed) => {
                Some("after its loads, before the run step (interrupted)".to_string())
            }
            None => None,
        };
        let Some(mean) = mean_load(&loads).filter(|_| stopped_in.is_none() && error.is_none())
        else {
            unfinished = Some(StudyUnfinished {
                fillfactor: ff,
                loads_planned: repeat,
                loads,
                stopped_in: stopped_in.unwrap_or_else(|| "its loads (failed)".into()),
            });
            break;
        };
        protocol = Some(b.workload(job.run.protocol).protocol);
        let (steps, err) = run_steps(server, &b, &tables, job, observer, interrupt).await;
        for st in &steps {
            let pct = |p: f64| st.latency.at(p).map_or(f64::NAN, |v| v as f64 / 1e6);
            let first = rows.iter().find(|r| r.threads == st.threads);
            rows.push(StudyRow {
                fillfactor: ff,
                threads: st.threads,
                load_s: mean.load_s,
                load_wal_bytes: mean.load_wal_bytes,
                wal_dir_growth_bytes: mean.wal_dir_growth_bytes,
                relation_bytes: mean.relation_bytes,
                data_directory_bytes,
                physical_bytes: mean.physical_bytes,
                physical_of_logical_bytes: mean.physical_of_logical_bytes,
                physical_source: source.clone(),
                physical_estimated: estimated,
                physical_split: mean.physical_split.clone(),
                physical_spread: Spread::of(
                    &loads
                        .iter()
                        .filter_map(|l| l.physical_bytes)
                        .collect::<Vec<_>>(),
                ),
                drive_spread: Spread::of(
                    &loads
                        .iter()
                        .filter_map(|l| l.physical_split.as_ref().map(|s| s.drive_bytes))
                        .collect::<Vec<_>>(),
                ),
                loads: if loads.len() > 1 {
                    loads.clone()
                } else {
                    Vec::new()
                },
                ratio: match (mean.physical_of_logical_bytes, mean.physical_bytes) {
                    (Some(l), Some(p)) if p > 0.0 => Some(l / p),
                    _ => None,
                },
                tps: st.tps,
                lat_avg_ms: st.latency.mean_ns / 1e6,
                lat_p95_ms: pct(95.0),
                lat_p99_ms: pct(99.0),
                logical_growth: first.map_or(0.0, |f| {
                    mean.relation_bytes as f64 / f.relation_bytes.max(1) as f64 - 1.0
                }),
                physical_growth: match (first, mean.physical_bytes) {
                    (None, Some(_)) => Some(0.0),
                    (Some(f), Some(p)) => f.physical_bytes.map(|fp| p / fp - 1.0),
                    _ => None,
                },
            });
        }
        if steps.is_empty() {
            // No step finished: the loads are all this fillfactor has.
            unfinished = Some(StudyUnfinished {
                fillfactor: ff,
                loads_planned: repeat,
                loads: loads.clone(),
                stopped_in: format!(
                    "the run step ({})",
                    if err.is_some() {
                        "failed"
                    } else {
                        "interrupted"
                    }
                ),
            });
        }
        runs.push(StudyRun {
            fillfactor: ff,
            steps,
        });
        if err.is_some() {
            error = err;
            break;
        }
    }
    let protocol = protocol.unwrap_or(Protocol::Prepared);
    let interrupted = interrupt.load(Ordering::Relaxed);
    let result = StudyResult {
        schema: STUDY_SCHEMA.to_string(),
        tool: ToolInfo::current(),
        started_at,
        server: server.source.name().to_string(),
        server_version: version,
        server_dialect: Some(server.dialect.describe()),
        spec: job.db_spec(bench, &tables, protocol, None),
        fillfactors,
        physical_method,
        rows,
        runs,
        unfinished,
        interrupted: interrupted || error.is_some(),
        error: error.clone(),
    };
    ended(result, error, interrupted)
}

/// The mean of a fillfactor's measured loads (None without any): every
/// figure averaged; an optional one only when every load has it.
fn mean_load(loads: &[StudyLoad]) -> Option<StudyLoad> {
    if loads.is_empty() {
        return None;
    }
    let n = loads.len() as f64;
    let mean = |f: &dyn Fn(&StudyLoad) -> f64| loads.iter().map(f).sum::<f64>() / n;
    let all = |f: &dyn Fn(&StudyLoad) -> Option<f64>| {
        loads
            .iter()
            .map(f)
            .collect::<Option<Vec<f64>>>()
            .map(|v| v.iter().sum::<f64>() / n)
    };
    let splits: Option<Vec<&PhysicalSplit>> =
        loads.iter().map(|l| l.physical_split.as_ref()).collect();
    let split = splits.map(|s| {
        let m = |f: &dyn Fn(&PhysicalSplit) -> f64| s.iter().map(|x| f(x)).sum::<f64>() / n;
        PhysicalSplit {
            drive_bytes: m(&|x| x.drive_bytes),
            drive_logical_bytes: m(&|x| x.drive_logical_bytes),
            relations_bytes: m(&|x| x.relations_bytes),
            wal_bytes: s
                .iter()
                .map(|x| x.wal_bytes)
                .collect::<Option<Vec<f64>>>()
                .map(|v| v.iter().sum::<f64>() / n),
            rest_bytes: m(&|x| x.rest_bytes),
            method: s[0].method.clone(),
        }
    });
    Some(StudyLoad {
        load_s: mean(&|l| l.load_s),
        relation_bytes: mean(&|l| l.relation_bytes as f64).round() as i64,
        physical_bytes: all(&|l| l.physical_bytes),
        physical_of_logical_bytes: all(&|l| l.physical_of_logical_bytes),
        physical_split: split,
        load_wal_bytes: all(&|l| l.load_wal_bytes.map(|v| v as f64)).map(|v| v.round() as i64),
        wal_dir_growth_bytes: all(&|l| l.wal_dir_growth_bytes.map(|v| v as f64))
            .map(|v| v.round() as i64),
    })
}
