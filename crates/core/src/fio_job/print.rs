//! A command line's spec as the fio job file it means (`csdchar block
//! --print-job`): fio's option names and units, what fio cannot express in
//! comments, and targets fio's grammar cannot carry refused.

use crate::pattern::Fill;
use crate::rate::RateProcess;
use crate::result::block::{BlockSpec, EngineKind};
use crate::stats::DEFAULT_PERCENTILES;

/// Why a command line cannot be printed as a job file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PrintJobError(pub String);

/// `target` as a `filename=` value that fio's parser (and [`super::ini`]) reads back
/// as the same path: ':' escaped as `\:`; refused when the grammar has no way
/// to carry it (a value ends at ';', '#' or the line's end, loses its outer
/// blanks, and has `${VAR}` and `$keywords` replaced).
pub fn filename_value(target: &str) -> Result<String, PrintJobError> {
    let why = if target.contains([';', '#']) {
        Some("holds ';' or '#', where fio's parser cuts the line")
    } else if target.chars().any(char::is_control) {
        Some("holds a control character (a newline would end the line)")
    } else if target.trim() != target {
        Some("starts or ends with a blank, which fio's parser strips")
    } else if target.contains("${")
        || ["$pagesize", "$mb_memory", "$ncpus"]
            .iter()
            .any(|k| target.contains(k))
    {
        Some("holds '${' or a fio keyword, which fio's parser replaces")
    } else {
        None
    };
    match why {
        Some(why) => Err(PrintJobError(format!(
            "--print-job: TARGET {target:?} {why}; a fio job file cannot name it (rename it, or \
             leave out --print-job)"
        ))),
        None => Ok(target.replace(':', "\\:")),
    }
}

/// `text` on one comment line: control characters written as escapes, so
/// no argument can start a line of its own.
fn comment_text(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The job file a command-line spec means, for `--print-job`: fio's option
/// names and units, with what fio cannot express said in comments. Refused
/// when the target is a path fio's grammar cannot carry ([`filename_value`]).
pub fn print_job(spec: &BlockSpec, command: &str) -> Result<String, PrintJobError> {
    let filename = spec.target.as_deref().map(filename_value).transpose()?;
    let mut lines = vec![
        format!("; {}", comment_text(command)),
        "; as a fio job file (csdchar block --job-file reads it back)".to_string(),
    ];
    if spec.compress_pct > 0 && spec.compress_fill == Fill::Repeat {
        lines.push(
            "; csdchar fills the compressible part with a repeating pattern, fio with zeros, which"
                .into(),
        );
        lines.push(
            "; zero-detecting drives store for nothing: same ratio, maybe not the same drive work"
                .into(),
        );
    }
    if spec.force {
        lines.push(
            "; asked with --force: a job file cannot say it, give --force to csdchar block --job-file"
                .into(),
        );
    }
    let ioengine = match spec.engine {
        EngineKind::Uring => "io_uring",
        EngineKind::Null => "null",
    };
    lines.push("[global]".into());
    lines.push(format!("ioengine={ioengine}"));
    lines.push(format!("direct={}", u8::from(spec.direct)));
    lines.push(format!("randseed={}", spec.seed));
    lines.push(String::new());
    lines.push("[csdchar]".into());
    if spec.rw_seq_add != 0 {
        lines.push(format!("rw={}:{}", spec.rw.name(), spec.rw_seq_add));
    } else {
        lines.push(format!("rw={}", spec.rw.name()));
    }
    if spec.rw.reads() && spec.rw.writes() {
        lines.push(format!("rwmixread={}", spec.rwmixread));
    }
    lines.push(format!("bs={}", spec.bs));
    if !spec.bssplit.is_none() {
        lines.push(format!("bssplit={}", spec.bssplit.to_fio()));
    }
    lines.push(format!("iodepth={}", spec.iodepth));
    if spec.numjobs > 1 {
        lines.push(format!("numjobs={}", spec.numjobs));
        lines.push("group_reporting".into());
    }
    if let Some(f) = filename {
        lines.push(format!("filename={f}"));
    }
    if spec.size > 0 {
        lines.push(format!("size={}", spec.size));
    }
    if spec.fallocate.is_sparse() {
        // csdchar sizes a file sparse; fio's default fallocates it.
        lines.push("fallocate=truncate".into());
    }
    if spec.offset_increment > 0 {
        lines.push(format!("offset_increment={}", spec.offset_increment));
    }
    if spec.offset > 0 {
        lines.push(format!("offset={}", spec.offset));
    }
    if let Some(ms) = spec.runtime_ms {
        lines.push(format!("runtime={ms}ms"));
    }
    if spec.time_based {
        lines.push("time_based".into());
    }
    if spec.ramp_time_ms > 0 {
        lines.push(format!("ramp_time={}ms", spec.ramp_time_ms));
    }
    if spec.io_size > 0 {
        lines.push(format!("io_size={}", spec.io_size));
    }
    if spec.number_ios > 0 {
        lines.push(format!("number_ios={}", spec.number_ios));
    }
    if spec.loops > 1 {
        lines.push(format!("loops={}", spec.loops));
    }
    if spec.compress_pct > 0 {
        lines.push(format!("buffer_compress_percentage={}", spec.compress_pct));
        lines.push(format!("buffer_compress_chunk={}", spec.compress_chunk));
        lines.push("refill_buffers".into());
    }
    if spec.dedupe_pct > 0 {
        lines.push(format!(
            "; csdchar's --dedupe copies {}% of chunks, fio's dedupe_percentage whole buffers",
            spec.dedupe_pct
        ));
        lines.push(format!("dedupe_percentage={}", spec.dedupe_pct));
    }
    if spec.iodepth_batch_submit > 0 {
        lines.push(format!(
            "iodepth_batch_submit={}",
            spec.iodepth_batch_submit
        ));
    }
    lines.push(format!(
        "iodepth_batch_complete_min={}",
        spec.iodepth_batch_complete
    ));
    if spec.verify {
        lines.push("verify=crc32c".into());
    }
    if !spec.rate.is_none() {
        let per_dir = |v: &[u64; 3]| v.map(|x| x.to_string()).join(",");
        let r = &spec.rate;
        for (name, v) in [
            ("rate", &r.bytes_per_s),
            ("rate_iops", &r.iops),
            ("rate_min", &r.min_bytes_per_s),
            ("rate_iops_min", &r.min_iops),
        ] {
            if *v != [0; 3] {
                lines.push(format!("{name}={}", per_dir(v)));
            }
        }
        if r.process == RateProcess::Poisson {
            lines.push("rate_process=poisson".into());
        }
        lines.push(format!("rate_cycle={}", r.cycle_ms));
    }
    if !spec.random_distribution.is_uniform() {
        lines.push(format!("random_distribution={}", spec.random_distribution));
    }
    if spec.percentiles != DEFAULT_PERCENTILES {
        let list: Vec<String> = spec.percentiles.iter().map(|p| p.to_string()).collect();
        lines.push(format!("percentile_list={}", list.join(":")));
    }
    lines.push(String::new());
    Ok(lines.join("\n"))
}
