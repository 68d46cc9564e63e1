//! fio's pacing options in a job (`blockalign`, `io_submit_mode`,
//! `random_generator`), kept apart from the option table in `mod.rs`, and the
//! combinations csdchar does not run.

use super::{Builder, value};
use crate::pace::{LatencyTarget, Pacing, RandomGenerator};
use crate::result::block::RwMode;

impl Builder {
    /// Whether `name` is one of the pacing options.
    pub(super) fn takes_pace(name: &str) -> bool {
        takes(name)
    }

    /// Sets one pacing option. Ok(Err(why)): a value csdchar lacks.
    pub(super) fn set_pace(&mut self, name: &str, v: &str) -> Result<Result<(), String>, String> {
        set(&mut self.pace, name, v, self.kb_base)
    }
}

/// Whether `name` is one of the pacing options.
fn takes(name: &str) -> bool {
    matches!(
        name,
        "blockalign"
            | "ba"
            | "io_submit_mode"
            | "random_generator"
            | "latency_target"
            | "latency_window"
            | "latency_percentile"
            | "latency_run"
    )
}

/// Sets one pacing option. Ok(Err(why)): a value csdchar lacks.
fn set(p: &mut Pacing, name: &str, v: &str, kb_base: u64) -> Result<Result<(), String>, String> {
    let wrap = |e: value::ValueError| e.to_string();
    match name {
        "blockalign" | "ba" => {
            // Per direction as bs (fio's FIO_OPT_ULL with off1..off3).
            for (slot, part) in p.blockalign.iter_mut().zip(value::per_direction(v)) {
                if let Some(t) = part {
                    let a = value::bytes(t, kb_base).map_err(wrap)?;
                    if a == 0 {
                        return Err(format!("blockalign={v}: must be at least 1"));
                    }
                    *slot = a;
                }
            }
        }
        "io_submit_mode" => {
            p.offload = match v {
                "inline" => false,
                "offload" => true,
                other => return Err(format!("io_submit_mode={other}: inline or offload")),
            }
        }
        "latency_target" | "latency_window" | "latency_percentile" | "latency_run" => {
            let l = p.latency.get_or_insert(LatencyTarget {
                target_ns: 0,
                window_us: 0,
                percentile: 100.0,
                run: false,
            });
            match name {
                // Times without a unit are µs (fio's is_time options).
                "latency_target" => {
                    l.target_ns = value::time_us(v, false).map_err(wrap)?.saturating_mul(1000)
                }
                "latency_window" => l.window_us = value::time_us(v, false).map_err(wrap)?,
                "latency_percentile" => {
                    l.percentile = v
                        .trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|x| (0.0..=100.0).contains(x))
                        .ok_or_else(|| format!("latency_percentile={v}: a percentage (0 to 100)"))?
                }
                _ => l.run = value::boolean(Some(v)).map_err(wrap)?,
            }
        }
        _ => {
            p.generator = match v {
                "tausworthe" | "tausworthe64" => RandomGenerator::Uniform,
                "lfsr" => RandomGenerator::Lfsr,
                other => {
                    return Err(format!(
                        "random_generator={other}: tausworthe, lfsr or tausworthe64"
                    ));
                }
            }
        }
    }
    Ok(Ok(()))
}

impl Builder {
    /// The pacing the engine runs for a job whose offsets are counted in
    /// `unit` bytes (each direction's smallest size, `units`); what csdchar
    /// does not run goes to `lacks` and falls back to fio's default.
    pub(super) fn pacing(
        &self,
        units: [u64; 3],
        several_files: bool,
        lacks: &mut Vec<(&'static str, String)>,
    ) -> Pacing {
        let mut p = self.pace.clone();
        // fio's profile is off without a target.
        p.latency = p.latency.filter(|l| l.target_ns > 0);
        let used = [self.rw.reads(), self.rw.writes(), self.rw.trims()];
        // fio: only random I/O is aligned to blockalign.
        if !self.rw.is_random() {
            p.blockalign = [0; 3];
        }
        let aligned = (0..3).any(|d| used[d] && p.align(d, units[d]) != units[d]);
        if aligned {
            let why = if self.verify {
                Some("blockalign with verify (csdchar verifies blocks of one size, each once)")
            } else if several_files {
                Some("blockalign with several files")
            } else if matches!(self.rw, RwMode::Randtrimwrite) {
                Some("blockalign with randtrimwrite (the write goes where the trim went)")
            } else if !self.random_distribution.is_uniform()
                && differ(used, |d| p.align(d, units[d]))
            {
                Some("blockalign differing between directions with a skewed random_distribution")
            } else {
                None
            };
            if let Some(w) = why {
                lacks.push(("blockalign", w.into()));
                p.blockalign = [0; 3];
            }
        }
        if p.generator == RandomGenerator::Lfsr && self.rw.is_random() {
            let why = if !self.random_distribution.is_uniform() {
                Some("random_generator=lfsr with a skewed random_distribution")
            } else if p.blockalign != [0; 3] {
                Some("random_generator=lfsr with blockalign")
            } else if several_files {
                Some("random_generator=lfsr with several files")
            } else if differ(used, |d| units[d]) {
                Some("random_generator=lfsr with block sizes differing between directions")
            } else if self.rw.trims() && self.rw.writes() {
                Some("random_generator=lfsr with randtrimwrite")
            } else {
                None
            };
            if let Some(w) = why {
                lacks.push(("random_generator", w.into()));
                p.generator = RandomGenerator::Uniform;
            }
        }
        p
    }
}

/// Whether `f` differs between the directions in use.
fn differ(used: [bool; 3], f: impl Fn(usize) -> u64) -> bool {
    let mut vals = (0..3).filter(|&d| used[d]).map(f);
    let first = vals.next();
    vals.any(|v| Some(v) != first)
}

#[cfg(test)]
mod tests {
    use super::super::ini::{Expansion, parse};
    use super::super::value::Keywords;
    use super::super::{PlanError, plan};
    use crate::pace::RandomGenerator;

    fn planned(body: &str) -> Result<super::super::JobFilePlan, PlanError> {
        let exp = Expansion {
            var: &|_| None,
            keywords: Keywords {
                pagesize: 4096,
                mb_memory: 1024,
                ncpus: 2,
            },
        };
        let text = format!("[j]\nfilename=/tmp/x\nsize=1m\n{body}\n");
        plan(
            &parse("t.fio", &text, &exp, &mut |n, _| Err(format!("{n}: none"))).unwrap(),
            false,
        )
    }

    fn refusal(body: &str) -> String {
        planned(body).unwrap_err().to_string()
    }

    #[test]
    fn pacing_options_take_fio_s_values() {
        let p = planned("rw=randrw\nba=8k,4k\nio_submit_mode=offload").unwrap();
        let pace = &p.jobs[0].spec.pacing;
        assert_eq!(pace.blockalign, [8192, 4096, 4096]);
        assert!(pace.offload);
        // Sequential I/O is not aligned (fio sets ba to min_bs).
        let p = planned("rw=write\nblockalign=8k").unwrap();
        assert_eq!(p.jobs[0].spec.pacing.blockalign, [0; 3]);
        let p = planned("rw=randread\nrandom_generator=lfsr").unwrap();
        assert_eq!(p.jobs[0].spec.pacing.generator, RandomGenerator::Lfsr);
        let p =
            planned("rw=randread\nrandom_generator=tausworthe64\nio_submit_mode=inline").unwrap();
        assert!(p.jobs[0].spec.pacing.is_none());
        for (bad, says) in [
            (
                "io_submit_mode=thread",
                "io_submit_mode=thread: inline or offload",
            ),
            (
                "random_generator=xor",
                "random_generator=xor: tausworthe, lfsr or tausworthe64",
            ),
            ("blockalign=0", "blockalign=0: must be at least 1"),
        ] {
            let m = refusal(&format!("rw=randread\n{bad}"));
            assert!(m.contains(says) && m.contains("t.fio:"), "{bad}: {m}");
        }
    }

    #[test]
    fn combinations_csdchar_does_not_run_are_named() {
        for (body, says) in [
            (
                "rw=randwrite\nblockalign=8k\nverify=crc32c",
                "blockalign with verify",
            ),
            (
                "rw=randrw\nblockalign=8k,4k\nrandom_distribution=zipf:1.2",
                "blockalign differing between directions",
            ),
            (
                "rw=randread\nrandom_generator=lfsr\nrandom_distribution=zipf:1.2",
                "random_generator=lfsr with a skewed random_distribution",
            ),
            (
                "rw=randrw\nrandom_generator=lfsr\nbs=4k,8k",
                "random_generator=lfsr with block sizes differing",
            ),
        ] {
            let m = refusal(body);
            assert!(m.contains(says), "{body}: {m}");
        }
        // The same alignment in every direction runs with a skewed distribution.
        let p = planned("rw=randrw\nblockalign=8k\nrandom_distribution=zoned:50/5:50/95").unwrap();
        assert_eq!(p.jobs[0].spec.pacing.blockalign, [8192; 3]);
    }
}
