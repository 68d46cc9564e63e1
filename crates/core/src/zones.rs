//! fio's zone modes without I/O: `zonemode=strided` (io_u.c,
//! `setup_strided_zone_mode`: `zonesize` bytes of I/O in a window of
//! `zonerange` bytes, then the window moves on by `zonerange + zoneskip`) and
//! `zonemode=zbd` on a target that is not zoned, which fio emulates (zbd.c,
//! `init_zone_info`: zones of `zonesize` with write pointers kept in memory,
//! all empty when the run starts; writes go at a zone's write pointer,
//! `max_open_zones` bounds the zones written at once, full zones are reset,
//! `zone_reset_threshold`/`zone_reset_frequency` reset zones early, reads stay
//! below the write pointer unless `read_beyond_wp`, trims reset a zone).
//!
//! The engine keeps one [`ZoneTable`] per file for every job of a run (fio
//! shares a file's zone information between its jobs) and one [`ZoneJob`]
//! per job, and asks [`ZoneTable::adjust`] where each I/O goes.

use serde::{Deserialize, Serialize};

/// fio's most open zones (`ZBD_MAX_OPEN_ZONES`).
pub const MAX_OPEN_ZONES: u32 = 4096;

/// fio's `zonemode`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ZoneMode {
    /// No zones (fio's `none`).
    #[default]
    None,
    /// `zonesize` bytes in each window of `zonerange`, then skip `zoneskip`.
    Strided,
    /// Zoned block device semantics, emulated on a file or non-zoned device.
    Zbd,
}

/// A job's zone options, resolved (sizes in bytes).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ZoneSpec {
    /// Which zone mode.
    pub mode: ZoneMode,
    /// `zonesize`: strided: bytes of I/O per window; zbd: the zone size.
    pub size: u64,
    /// `zonerange`: strided: the window's size (default `zonesize`).
    #[serde(default)]
    pub range: u64,
    /// `zoneskip`: bytes skipped after each window (zbd: whole zones, sequential jobs).
    #[serde(default)]
    pub skip: u64,
    /// `zonecapacity`: zbd: the writable part of each zone (default the zone size).
    #[serde(default)]
    pub capacity: u64,
    /// `max_open_zones`: zbd: zones written at once on the file, all jobs together; 0: no limit.
    #[serde(default)]
    pub max_open: u32,
    /// `job_max_open_zones`: zbd: zones one job writes at once; 0: no limit.
    #[serde(default)]
    pub job_max_open: u32,
    /// `read_beyond_wp`: zbd: reads may go past a zone's write pointer.
    #[serde(default)]
    pub read_beyond_wp: bool,
    /// `zone_reset_threshold`: zbd: share of the job's region holding data above which writes
    /// reset zones early.
    #[serde(default)]
    pub reset_threshold: f64,
    /// `zone_reset_frequency`: zbd: share of writes that reset their zone above the threshold;
    /// 0: none.
    #[serde(default)]
    pub reset_frequency: f64,
}

impl ZoneSpec {
    /// No zone mode.
    pub fn is_none(&self) -> bool {
        self.mode == ZoneMode::None
    }
}

/// Where `zonemode=strided` puts a job's I/O: a window that moves on after
/// `zonesize` bytes (fio's `f->file_offset`, `td->zone_bytes`, `last_pos`).
#[derive(Debug, Clone)]
pub struct Strided {
    size: u64,
    range: u64,
    skip: u64,
    start: u64,
    end: u64,
    window: u64,
    zone_bytes: u64,
    last_pos: [u64; 3],
}

impl Strided {
    /// A job whose region starts at `start` on a target of `end` bytes.
    pub fn new(z: &ZoneSpec, start: u64, end: u64) -> Self {
        let range = if z.range == 0 { z.size } else { z.range };
        Strided {
            size: z.size.max(1),
            range: range.max(1),
            skip: z.skip,
            start,
            end,
            window: start,
            zone_bytes: 0,
            last_pos: [start; 3],
        }
    }

    /// The window's start and size for the next I/O of direction `dir`
    /// (0 read, 1 write, 2 trim), moving on when `zonesize` bytes are done.
    pub fn window(&mut self, dir: usize) -> (u64, u64) {
        if self.zone_bytes >= self.size {
            self.zone_bytes = 0;
            self.window += self.range + self.skip;
            if self.window >= self.end {
                self.window = self.start;
            }
            self.last_pos[dir] = self.window;
        }
        // zonesize above zonerange: the same window again.
        if self.last_pos[dir] >= self.window + self.range {
            self.last_pos[dir] = self.window;
        }
        (self.window, self.range)
    }

    /// The next sequential I/O of `len` bytes: its offset, None past the
    /// target's end (fio's job then ends).
    pub fn next_seq(&mut self, dir: usize, len: u64) -> Option<u64> {
        self.window(dir);
        let off = self.last_pos[dir];
        if off + len > self.end {
            return None;
        }
        self.done(dir, off, len);
        Some(off)
    }

    /// A random I/O: `rel` (an offset the job drew in its region, a multiple
    /// of `unit`) folded into the window; None past the target's end.
    pub fn next_random(&mut self, dir: usize, rel: u64, unit: u64, len: u64) -> Option<u64> {
        let (w, range) = self.window(dir);
        let blocks = (range.saturating_sub(len) / unit.max(1)) + 1;
        let off = w + (rel / unit.max(1) % blocks) * unit;
        if off + len > self.end {
            return None;
        }
        self.done(dir, off, len);
        Some(off)
    }

    fn done(&mut self, dir: usize, off: u64, len: u64) {
        self.last_pos[dir] = off + len;
        self.zone_bytes += len;
    }
}

/// Where an I/O goes under `zonemode=zbd`, or why it does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// Offset and length; `reset`: the zone's write pointer went back to its
    /// start first (a zone reset).
    Io { offset: u64, len: u64, reset: bool },
    /// No zone can take it: the job ends (fio's `io_u_eof`).
    End,
}

/// One job's view of the zones: its region and limits.
#[derive(Debug, Clone)]
pub struct ZoneJob {
    /// First byte of the job's region.
    pub file_offset: u64,
    /// Bytes of the region.
    pub io_size: u64,
    /// Whether the job's offsets are random.
    pub random: bool,
    /// Smallest block of each direction (fio's min_bs).
    pub min_bs: [u64; 3],
    /// Zones this job has open.
    pub open: u32,
    min_zone: u32,
    max_zone: u32,
}

/// The zones of one file, shared by every job on it.
#[derive(Debug, Clone)]
pub struct ZoneTable {
    spec: ZoneSpec,
    zone_size: u64,
    capacity: u64,
    nr_zones: u32,
    wp: Vec<u64>,
    open: Vec<u32>,
    write_cnt: u32,
    /// Bytes below the write pointers (fio's `wp_sectors_with_data`).
    pub with_data: u64,
    /// Zones reset (fio's `nr_zone_resets`).
    pub resets: u64,
}

impl ZoneTable {
    /// Every zone of a target of `real_size` bytes, empty (fio's
    /// `init_zone_info`). Err: fio's refusal.
    pub fn new(spec: &ZoneSpec, real_size: u64) -> Result<Self, String> {
        let zone_size = spec.size;
        if zone_size < 512 {
            return Err("zonesize must be at least 512 bytes for zonemode=zbd".into());
        }
        if real_size < zone_size {
            return Err(format!(
                "the file or device ({real_size} bytes) is smaller than zonesize ({zone_size})"
            ));
        }
        let capacity = if spec.capacity == 0 {
            zone_size
        } else {
            spec.capacity
        };
        let nr_zones = real_size.div_ceil(zone_size);
        let nr_zones = u32::try_from(nr_zones).map_err(|_| "too many zones".to_string())?;
        let mut t = ZoneTable {
            spec: spec.clone(),
            zone_size,
            capacity,
            nr_zones,
            wp: (0..u64::from(nr_zones)).map(|i| i * zone_size).collect(),
            open: Vec::new(),
            write_cnt: 0,
            with_data: 0,
            resets: 0,
        };
        t.reset_write_cnt();
        Ok(t)
    }

    /// The zone size.
    pub fn zone_size(&self) -> u64 {
        self.zone_size
    }

    /// Zone `i`'s write pointer.
    pub fn wp(&self, i: u32) -> u64 {
        self.wp[i as usize]
    }

    /// A job on region `[file_offset, file_offset + io_size)`.
    pub fn job(&self, file_offset: u64, io_size: u64, random: bool, min_bs: [u64; 3]) -> ZoneJob {
        ZoneJob {
            file_offset,
            io_size,
            random,
            min_bs: min_bs.map(|b| b.max(1)),
            open: 0,
            min_zone: self.zone_of(file_offset),
            max_zone: self.zone_of(file_offset + io_size),
        }
    }

    fn zone_of(&self, offset: u64) -> u32 {
        ((offset / self.zone_size) as u32).min(self.nr_zones)
    }

    fn start(&self, z: u32) -> u64 {
        u64::from(z) * self.zone_size
    }

    fn cap_end(&self, z: u32) -> u64 {
        self.start(z) + self.capacity
    }

    fn full(&self, z: u32, required: u64) -> bool {
        self.wp[z as usize] + required > self.cap_end(z)
    }

    fn is_open(&self, z: u32) -> bool {
        self.open.contains(&z)
    }

    fn reset_write_cnt(&mut self) {
        let f = self.spec.reset_frequency;
        self.write_cnt = if f > 0.0 {
            (1.0 / f).min(f64::from(u32::MAX)) as u32
        } else {
            u32::MAX
        };
    }

    fn close(&mut self, job: &mut ZoneJob, z: u32) {
        if let Some(i) = self.open.iter().position(|&o| o == z) {
            self.open.remove(i);
            job.open = job.open.saturating_sub(1);
        }
    }

    /// fio's `zbd_reset_zone`: the write pointer back to the zone's start.
    fn reset(&mut self, z: u32) -> bool {
        let data = self.wp[z as usize] - self.start(z);
        if data == 0 {
            return false;
        }
        self.with_data -= data;
        self.wp[z as usize] = self.start(z);
        self.resets += 1;
        true
    }

    /// fio's `zbd_open_zone`.
    fn open_zone(&mut self, job: &mut ZoneJob, z: u32) -> bool {
        if self.spec.max_open == 0 {
            return true;
        }
        if self.is_open(z) {
            return self.wp[z as usize] < self.cap_end(z);
        }
        if self.spec.job_max_open > 0 && job.open >= self.spec.job_max_open {
            return false;
        }
        if self.open.len() as u32 >= self.spec.max_open {
            return false;
        }
        self.open.push(z);
        job.open += 1;
        true
    }

    fn in_job(&self, job: &ZoneJob, z: u32) -> bool {
        job.min_zone <= z && z < job.max_zone
    }

    /// fio's `zbd_convert_to_open_zone`: an open zone (or one it opens) with
    /// room for a block, for a write at `offset`.
    fn convert_to_open_zone(&mut self, job: &mut ZoneJob, offset: u64) -> Option<u32> {
        let min_bs = job.min_bs[1];
        let limited = self.spec.max_open > 0 || self.spec.job_max_open > 0;
        let pick = |n: usize| -> usize {
            ((u128::from(offset - job.file_offset) * n as u128) / u128::from(job.io_size.max(1)))
                as usize
        };
        let mut z = if limited {
            self.open.get(pick(self.open.len())).copied().unwrap_or(0)
        } else {
            self.zone_of(offset)
        };
        z = z.clamp(job.min_zone, job.max_zone.saturating_sub(1));
        let mut examine = !limited;
        if limited && !self.open.is_empty() {
            let n = self.open.len();
            let first = pick(n).min(n - 1);
            match (0..n)
                .map(|i| self.open[(first + i) % n])
                .find(|&o| self.in_job(job, o))
            {
                Some(o) => {
                    z = o;
                    examine = true;
                }
                None => return None,
            }
        }
        if examine && self.wp[z as usize] + min_bs <= self.cap_end(z) {
            return Some(z);
        }
        // That zone is full: open another one after it, wrapping.
        for _ in 0..job.io_size / self.zone_size {
            z += 1;
            if self.start(z).wrapping_sub(job.file_offset) >= job.io_size || z >= self.nr_zones {
                z = job.min_zone;
            }
            if self.is_open(z) {
                continue;
            }
            if self.open_zone(job, z) {
                return Some(z);
            }
        }
        // Any open zone of the job with room.
        self.open
            .iter()
            .copied()
            .find(|&o| self.in_job(job, o) && self.wp[o as usize] + min_bs <= self.cap_end(o))
    }

    /// fio's `zbd_find_zone`: the next zone (random jobs: the nearest, either
    /// way) holding at least `min_bytes` of data.
    fn find_zone(&self, job: &ZoneJob, from: u32, min_bytes: u64) -> Option<u32> {
        let (mut up, mut down) = (i64::from(from) + 1, i64::from(from) - 1);
        let (lo, hi) = (i64::from(job.min_zone), i64::from(job.max_zone));
        while up < hi || down >= lo {
            if up < hi {
                let z = up as u32;
                if self.start(z) + min_bytes <= self.wp[z as usize] {
                    return Some(z);
                }
            } else if !job.random {
                break;
            }
            if job.random && down >= lo {
                let z = down as u32;
                if self.start(z) + min_bytes <= self.wp[z as usize] {
                    return Some(z);
                }
            }
            up += 1;
            down -= 1;
        }
        None
    }

    /// Where an I/O of direction `dir` (0 read, 1 write, 2 trim) the job
    /// planned at `offset`, `len` bytes, goes (fio's `zbd_adjust_block`, then
    /// `zbd_queue_io`: a write moves its zone's write pointer, a trim resets
    /// its zone). Err: fio's error for the job.
    pub fn adjust(
        &mut self,
        job: &mut ZoneJob,
        dir: usize,
        offset: u64,
        len: u64,
    ) -> Result<Placed, String> {
        let min_bs = job.min_bs[dir];
        let zb = self.zone_of(offset);
        if zb >= self.nr_zones {
            return Ok(Placed::End);
        }
        match dir {
            0 => {
                if self.spec.read_beyond_wp {
                    return Ok(Placed::Io {
                        offset,
                        len,
                        reset: false,
                    });
                }
                let mut z = zb;
                let mut offset = offset;
                let mut range = self.wp[z as usize] - self.start(z);
                if range < min_bs || (!job.random && offset + min_bs > self.wp[z as usize]) {
                    let Some(f) = self.find_zone(job, zb, min_bs) else {
                        return Ok(Placed::End);
                    };
                    z = f;
                    range = self.wp[z as usize] - self.start(z);
                    if !job.random {
                        offset = self.start(z);
                    }
                }
                if range <= len {
                    offset = self.start(z);
                } else if job.random {
                    offset = self.start(z)
                        + ((offset - self.start(zb)) % (range - len)) / min_bs * min_bs;
                }
                let len = len.min(self.wp[z as usize] - offset) / min_bs * min_bs;
                Ok(Placed::Io {
                    offset,
                    len,
                    reset: false,
                })
            }
            1 => {
                if len > self.zone_size {
                    return Err(format!(
                        "a write of {len} bytes is larger than the zone ({} bytes)",
                        self.zone_size
                    ));
                }
                let mut z = zb;
                // A sequential writer at a zone's capacity goes on at the
                // next zone's start (fio's setup_zbd_zone_mode).
                if !job.random && offset >= self.cap_end(z) {
                    if z + 1 >= job.max_zone {
                        return Ok(Placed::End);
                    }
                    z += 1;
                }
                if !self.open_zone(job, z) {
                    match self.convert_to_open_zone(job, offset) {
                        Some(o) => z = o,
                        None => return Ok(Placed::End),
                    }
                }
                let mut early = false;
                if self.spec.reset_frequency > 0.0
                    && self.with_data as f64 >= job.io_size as f64 * self.spec.reset_threshold
                {
                    self.write_cnt = self.write_cnt.saturating_sub(1);
                    if self.write_cnt == 0 {
                        self.reset_write_cnt();
                        early = true;
                    }
                }
                let mut reset = false;
                if early || self.full(z, min_bs) {
                    reset = self.reset(z);
                    if self.capacity < min_bs {
                        return Err(format!(
                            "zone capacity {} is smaller than the block size {min_bs}",
                            self.capacity
                        ));
                    }
                }
                let offset = self.wp[z as usize];
                let len = len.min(self.cap_end(z) - offset) / min_bs * min_bs;
                if len < min_bs {
                    return Err(format!(
                        "zone remainder {} is smaller than the block size {min_bs}",
                        self.cap_end(z) - offset
                    ));
                }
                let end = (offset + len).min(self.cap_end(z));
                self.with_data += end - self.wp[z as usize];
                self.wp[z as usize] = end;
                if end >= self.cap_end(z) {
                    self.close(job, z);
                }
                Ok(Placed::Io { offset, len, reset })
            }
            _ => {
                let mut z = zb;
                if job.random && self.wp[z as usize] == self.start(z) {
                    match self.find_zone(job, zb, 1) {
                        Some(f) => z = f,
                        None => return Ok(Placed::End),
                    }
                } else if offset != self.start(z) {
                    return Err(format!("a trim at {offset}, not at a zone's start"));
                }
                let reset = self.reset(z);
                Ok(Placed::Io {
                    offset: self.start(z),
                    len,
                    reset,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests;
