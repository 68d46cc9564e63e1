//! A job's options, as the builder gathered them, made into the engine's
//! [`BlockSpec`]: fio's defaults filled in, combinations csdchar cannot run
//! named.

use super::*;

impl Builder {
    /// The engine's spec for `target` with `numjobs` threads. Combinations
    /// csdchar cannot run go to `lacks` as (option, why), and the spec falls
    /// back to what it can run (used only under `--ignore-unsupported`).
    pub(super) fn spec(
        &self,
        target: Option<String>,
        numjobs: u32,
        seed: u64,
        section: &Section,
        lacks: &mut Vec<(&'static str, String)>,
    ) -> Result<BlockSpec, String> {
        // The option at fault as written and where (the section's header
        // when it was never set).
        let bad = |name: &str, m: &str| {
            let (written, place) = self.where_set(name, section);
            if written.starts_with('[') {
                Err(format!("{written} ({place}): {name}: {m}"))
            } else {
                Err(format!("{written} ({place}): {m}"))
            }
        };
        // With bssplit, a direction's smallest size is its unit (fio's min_bs).
        let (bs, bssplit) = self.sizes(self.bssplit_lacks(lacks), lacks);
        let Some(bs) = bs.filter(|b| (1..=MAX_BS).contains(b)) else {
            return bad("bs", "must be between 1 byte and 256m");
        };
        let aio = matches!(self.replaced_engine.as_deref(), None | Some("libaio"));
        if let Some(n) = share::engine_option(&self.set_at, self.engine == EngineKind::Uring && aio)
        {
            return bad(
                n,
                "an option of the io_uring and libaio engines (fio refuses it with this ioengine)",
            );
        }
        if self.direct && !bs.is_multiple_of(512) {
            return bad("bs", "must be a multiple of 512 with direct=1");
        }
        if let Some(m) = Self::bssplit_invalid(&bssplit, self.direct) {
            return bad("bssplit", &m);
        }
        if self.compress_chunk == 0 && self.compress_pct > 0 {
            return bad("buffer_compress_chunk", "must be positive");
        }
        let (mut size, mut offset, mut io_size) = (self.size, self.offset, self.io_size);
        let sizes = [&mut size, &mut offset, &mut io_size];
        let job = (self.rw, bs, self.files.several(self.filename.as_ref()));
        let zones = match zones::resolve(&self.zones, sizes, job, lacks) {
            Ok(z) => z,
            Err(m) => return bad("zonemode", &m),
        };
        let size = match (size, self.filesize) {
            // Several files: files::apply splits size over them.
            (s, _) if self.files.several(self.filename.as_ref()) => s,
            (s, Some(f)) if self.files.filesize_high != f => {
                lacks.push(("filesize", "a range of file sizes with one file".into()));
                s
            }
            // One file of fio's filesize: region and I/O as fio's setup_files.
            (s, Some(f)) => {
                if self.offset_increment != 0 {
                    lacks.push((
                        "filesize",
                        "filesize with offset_increment (fio's region is then the file less \
                         each job's own start)"
                            .into(),
                    ));
                }
                match files::one_file(s, offset, io_size, f, bs) {
                    Ok((region, io)) => {
                        // csdchar verifies a region done once, or a
                        // sequential write's blocks in the order written.
                        let logged = self.rw == RwMode::Write && bssplit.is_none();
                        if self.verify && io != io_size && !logged {
                            lacks.push((
                                "filesize",
                                "verify with a file larger than size= (csdchar verifies a \
                                 region done once)"
                                    .into(),
                            ));
                        }
                        io_size = io;
                        region
                    }
                    Err((name, m)) => return bad(name, &m),
                }
            }
            (s, _) => s,
        };
        let mut time_based = self.time_based;
        if time_based && self.runtime_us.is_none_or(|r| r == 0) {
            lacks.push((
                "time_based",
                "time_based without runtime, which runs until stopped (csdchar needs a runtime)"
                    .into(),
            ));
            time_based = false;
        }
        let mut verify = self.verify;
        // fio's verify in a read job: check what an earlier job with the same
        // verify settings wrote (every read is checked, do_verify or not:
        // do_verify is the read-back phase of a job that writes).
        let read_verify = verify && matches!(self.rw, RwMode::Read | RwMode::Randread);
        // do_verify=0 in a job that writes: the blocks carry their verify
        // headers, a later job checks them (fio's write phase of a verify).
        let verify_write_only = verify && !read_verify && !self.do_verify;
        // A sequential write job that does not cover its region once (io_size,
        // number_ios, loops, an offset modifier) checks what it wrote, in the
        // order written, as fio's io_piece list (fio-like's verify::follows).
        let logged = self.rw == RwMode::Write && bssplit.is_none();
        if verify
            && (((self.io_size > 0
                || self.number_ios > 0
                || self.loops > 1
                || self.rw_seq_add != 0)
                && !logged)
                || !self.random_distribution.is_uniform())
        {
            lacks.push((
                "verify",
                "verify in a job that does not write or read its region once (io_size, \
                 number_ios, loops, an offset modifier or a skewed random_distribution) other \
                 than a sequential rw=write with one block size (csdchar then checks the blocks \
                 written, in the order written)"
                    .into(),
            ));
            verify = false;
        }
        // A job that reads and writes checks its writes as fio's io_piece
        // list does (fio-like's verify_log::Mixed); its own reads check nothing.
        let mixed = matches!(self.rw, RwMode::Randrw | RwMode::Readwrite);
        if verify && !read_verify && self.rw.trims() {
            lacks.push((
                "verify",
                "verify in a job that trims (csdchar verifies what write, randwrite, rw and \
                 randrw jobs write, and checks it in a read or randread job)"
                    .into(),
            ));
            verify = false;
        }
        if verify && time_based {
            lacks.push((
                "verify",
                "verify in a time_based job (csdchar writes and checks every block once)".into(),
            ));
            verify = false;
        }
        // fio's verify_only: skip the workload, only check what an earlier
        // run of the same job wrote (csdchar's --verify-only).
        let verify_only = verify && (self.verify_only || read_verify);
        if verify_only {
            verify = false;
        }
        // fio's verify_backlog: a write job reads back every N blocks it wrote
        // (none with do_verify=0, which checks nothing itself).
        let (backlog, verify_batch) = self.layout.verify_backlog();
        let listed = logged || (bssplit.is_none() && (mixed || self.rw == RwMode::Randwrite));
        let verify_backlog = match backlog {
            n if verify && !verify_write_only && n > 0 && !listed => {
                lacks.push((
                    "verify_backlog",
                    "verify_backlog in a job other than write, randwrite, rw or randrw with one \
                     block size"
                        .into(),
                ));
                0
            }
            n if verify && !verify_write_only => n,
            _ => 0,
        };
        self.layout.lacks(self.rw, self.verify, lacks);
        let set = self.set_at.iter().any(|(n, _, _)| n == "ioengine");
        let async_engine = errors::async_engine(set, self.replaced_engine.as_deref());
        let mut rw_seq_add = self.rw_seq_add;
        if rw_seq_add != 0 && self.rw.is_random() {
            lacks.push((
                "rw",
                "a random mode with :N (fio then draws a new offset every N I/Os)".into(),
            ));
            rw_seq_add = 0;
        }
        // Each direction's offsets are multiples of its own smallest size.
        let used = [self.rw.reads(), self.rw.writes(), self.rw.trims()];
        let unit_of = |d: usize| bssplit.min_bs(d).unwrap_or(bs);
        if let Some(u) = (0..3)
            .filter(|&d| used[d])
            .map(unit_of)
            .find(|&u| rw_seq_add % u as i64 != 0)
        {
            lacks.push((
                "rw",
                format!("an offset modifier of {rw_seq_add} bytes, not a multiple of bs ({u})"),
            ));
            rw_seq_add = 0;
        }
        // The dedupe writer copies whole buffers of one size.
        if !self.dedupe.is_none() && !bssplit.is_none() {
            lacks.push((
                "dedupe_percentage",
                "with bssplit or per-direction block sizes".into(),
            ));
        }
        if let Some(m) = crate::dedupe::check(&self.dedupe, size, bs) {
            return bad("dedupe_percentage", &m);
        }
        let batch_submit = self.batch_submit.unwrap_or(0);
        if batch_submit > self.iodepth {
            return bad("iodepth_batch_submit", "must be at most iodepth");
        }
        if target.is_none() && self.engine != EngineKind::Null {
            return bad(
                "filename",
                "a block device or file is required (or directory=)",
            );
        }
        let ms = |us: u64| us.div_ceil(1000);
        let units = [0, 1, 2].map(|d| bssplit.min_bs(d).unwrap_or(bs));
        let pacing = self.pacing(units, self.files.several(self.filename.as_ref()), lacks);
        Ok(BlockSpec {
            target,
            rw: self.rw,
            rwmixread: self.rwmixread,
            bs,
            bssplit,
            iodepth: self.iodepth,
            numjobs,
            size,
            offset,
            runtime_ms: self.runtime_us.map(ms).filter(|&m| m > 0),
            time_based,
            ramp_time_ms: ms(self.ramp_us),
            direct: self.direct,
            seed,
            engine: self.engine,
            compress_pct: self.compress_pct,
            compress_chunk: self.compress_chunk.clamp(1, bs),
            compress_fill: Fill::Zeros,
            // fio's dedupe is of whole buffers (`dedupe`), not csdchar's chunks.
            dedupe_pct: 0,
            dedupe: self.dedupe.clone(),
            log_interval_ms: 1000,
            iodepth_batch_submit: batch_submit,
            iodepth_batch_complete: self.batch_complete.min(self.iodepth),
            verify,
            verify_only,
            force: false,
            percentiles: self.percentiles.clone(),
            start_at: None,
            random_distribution: self.random_distribution.clone(),
            logs: self.logs.clone(),
            rw_seq_add,
            files: Default::default(),
            think: self.think.clone(),
            zones,
            share: self.share.clone(),
            pacing,
            offset_increment: self.offset_increment,
            verify_write_only: verify && verify_write_only,
            verify_backlog,
            verify_batch: if verify_backlog > 0 { verify_batch } else { 0 },
            verify_dump: (verify || verify_only) && self.layout.verify_dump(),
            errors: self.layout.policy(verify || verify_only, async_engine),
            fill_device: self.layout.fill_device(self.rw),
            verify_pattern: self.layout.verify_pattern(),
            verify_meta: self.layout.meta,
            verify_interval: self.layout.verify_interval(bs),
            create_on_open: self.layout.create_on_open(self.rw, async_engine),
            fallocate: self.layout.fallocate(self.rw),
            steady_state: if self.steady.limit > 0.0 || self.steady.dur_s > 0 {
                self.steady.clone()
            } else {
                SteadySpec::default()
            },
            io_size,
            number_ios: self.number_ios,
            loops: self.loops,
            rate: if self.rate.is_none() {
                RateLimit::default()
            } else {
                self.rate.clone()
            },
        })
    }
}
