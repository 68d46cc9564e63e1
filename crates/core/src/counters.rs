//! Parsers for kernel counter files. Pure text in, typed values out; reading
//! the files is the callers' job. Malformed input is an error, never a panic.

use serde::{Deserialize, Serialize};

/// A counter file that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CounterError {
    /// Fewer fields than the format requires.
    #[error("{what}: expected at least {expected} fields, found {found}")]
    TooFewFields {
        /// Which format.
        what: &'static str,
        /// Required field count.
        expected: usize,
        /// Fields present.
        found: usize,
    },
    /// A field that is not an unsigned integer.
    #[error("{what}: field {index} is not a number: '{text}'")]
    NotANumber {
        /// Which format.
        what: &'static str,
        /// 1-based field index.
        index: usize,
        /// The offending text.
        text: String,
    },
}

/// The first `max` fields of a whitespace-separated counter line as numbers,
/// padded with zeros to `max`; fewer than `min` fields is an error. Fields a
/// newer kernel adds beyond `max` are ignored.
pub(crate) fn counter_fields(
    what: &'static str,
    fields: &[&str],
    min: usize,
    max: usize,
) -> Result<Vec<u64>, CounterError> {
    if fields.len() < min {
        return Err(CounterError::TooFewFields {
            what,
            expected: min,
            found: fields.len(),
        });
    }
    let mut v = numbers(what, &fields[..fields.len().min(max)])?;
    v.resize(max, 0);
    Ok(v)
}

fn numbers(what: &'static str, fields: &[&str]) -> Result<Vec<u64>, CounterError> {
    fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            f.parse::<u64>().map_err(|_| CounterError::NotANumber {
                what,
                index: i + 1,
                text: (*f).to_string(),
            })
        })
        .collect()
}

/// The block-layer I/O counters of one device: `/sys/block/X/stat` or one line
/// of `/proc/diskstats`. Sectors are always 512 bytes. Fields the running
/// kernel does not report (discard: 4.18+, flush: 5.5+) are 0.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct DiskStats {
    /// Reads completed.
    pub reads_completed: u64,
    /// Reads merged.
    pub reads_merged: u64,
    /// 512-byte sectors read.
    pub sectors_read: u64,
    /// Milliseconds spent reading.
    pub read_ms: u64,
    /// Writes completed.
    pub writes_completed: u64,
    /// Writes merged.
    pub writes_merged: u64,
    /// 512-byte sectors written.
    pub sectors_written: u64,
    /// Milliseconds spent writing.
    pub write_ms: u64,
    /// I/Os in flight (a gauge, not a counter).
    pub in_flight: u64,
    /// Milliseconds the device had I/O in flight.
    pub io_ms: u64,
    /// Weighted milliseconds doing I/O.
    pub weighted_io_ms: u64,
    /// Discards completed.
    pub discards_completed: u64,
    /// Discards merged.
    pub discards_merged: u64,
    /// 512-byte sectors discarded.
    pub sectors_discarded: u64,
    /// Milliseconds spent discarding.
    pub discard_ms: u64,
    /// Flushes completed.
    pub flushes_completed: u64,
    /// Milliseconds spent flushing.
    pub flush_ms: u64,
}

impl DiskStats {
    const WHAT: &'static str = "block device stat";

    /// Parses the text of `/sys/block/X/stat` (11, 15 or 17 fields).
    pub fn parse_sys_stat(text: &str) -> Result<DiskStats, CounterError> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        Self::from_fields(&fields)
    }

    fn from_fields(fields: &[&str]) -> Result<DiskStats, CounterError> {
        let v = counter_fields(Self::WHAT, fields, 11, 17)?;
        Ok(DiskStats {
            reads_completed: v[0],
            reads_merged: v[1],
            sectors_read: v[2],
            read_ms: v[3],
            writes_completed: v[4],
            writes_merged: v[5],
            sectors_written: v[6],
            write_ms: v[7],
            in_flight: v[8],
            io_ms: v[9],
            weighted_io_ms: v[10],
            discards_completed: v[11],
            discards_merged: v[12],
            sectors_discarded: v[13],
            discard_ms: v[14],
            flushes_completed: v[15],
            flush_ms: v[16],
        })
    }

    /// Counter increase from `before` to `self` (saturating: a counter that
    /// went backwards, e.g. after a device reset, gives 0). `in_flight` is the
    /// later gauge value.
    pub fn delta_since(&self, before: &DiskStats) -> DiskStats {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        DiskStats {
            reads_completed: d(self.reads_completed, before.reads_completed),
            reads_merged: d(self.reads_merged, before.reads_merged),
            sectors_read: d(self.sectors_read, before.sectors_read),
            read_ms: d(self.read_ms, before.read_ms),
            writes_completed: d(self.writes_completed, before.writes_completed),
            writes_merged: d(self.writes_merged, before.writes_merged),
            sectors_written: d(self.sectors_written, before.sectors_written),
            write_ms: d(self.write_ms, before.write_ms),
            in_flight: self.in_flight,
            io_ms: d(self.io_ms, before.io_ms),
            weighted_io_ms: d(self.weighted_io_ms, before.weighted_io_ms),
            discards_completed: d(self.discards_completed, before.discards_completed),
            discards_merged: d(self.discards_merged, before.discards_merged),
            sectors_discarded: d(self.sectors_discarded, before.sectors_discarded),
            discard_ms: d(self.discard_ms, before.discard_ms),
            flushes_completed: d(self.flushes_completed, before.flushes_completed),
            flush_ms: d(self.flush_ms, before.flush_ms),
        }
    }

    /// Bytes read (sectors × 512).
    pub fn bytes_read(&self) -> u64 {
        self.sectors_read * 512
    }

    /// Bytes written (sectors × 512).
    pub fn bytes_written(&self) -> u64 {
        self.sectors_written * 512
    }
}

/// One line of `/proc/diskstats`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskStatsLine {
    /// Device major number.
    pub major: u32,
    /// Device minor number.
    pub minor: u32,
    /// Kernel device name (`sda`, `nvme0n1p1`, `zram0`).
    pub name: String,
    /// The counters.
    pub stats: DiskStats,
}

/// Parses all of `/proc/diskstats`. Blank lines are skipped; a malformed line is
/// an error naming its line number.
pub fn parse_proc_diskstats(text: &str) -> Result<Vec<DiskStatsLine>, (usize, CounterError)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.is_empty() {
            continue;
        }
        let err = |e| (i + 1, e);
        if fields.len() < 14 {
            return Err(err(CounterError::TooFewFields {
                what: "/proc/diskstats line",
                expected: 14,
                found: fields.len(),
            }));
        }
        let mm = numbers("/proc/diskstats line", &fields[..2]).map_err(err)?;
        out.push(DiskStatsLine {
            major: mm[0] as u32,
            minor: mm[1] as u32,
            name: fields[2].to_string(),
            stats: DiskStats::from_fields(&fields[3..]).map_err(err)?,
        });
    }
    Ok(out)
}

/// zram's `mm_stat`: memory use of a compressed RAM block device.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct ZramMmStat {
    /// Logical bytes stored, same-filled pages included.
    pub orig_data_size: u64,
    /// Sum of compressed object sizes (an incompressible page counts 4096).
    pub compr_data_size: u64,
    /// Memory used by the allocator, fragmentation included.
    pub mem_used_total: u64,
    /// Memory limit in bytes (0 = none).
    pub mem_limit: u64,
    /// Peak memory use.
    pub mem_used_max: u64,
    /// Pages filled with one repeated word (zeros included), stored for free.
    pub same_pages: u64,
    /// Pages freed by compaction.
    pub pages_compacted: u64,
    /// Pages currently stored uncompressed.
    pub huge_pages: u64,
    /// Pages ever stored uncompressed (newer kernels; 0 otherwise).
    pub huge_pages_since: u64,
}

impl ZramMmStat {
    /// Parses the single line of `/sys/block/zramN/mm_stat` (8 or 9 fields).
    pub fn parse(text: &str) -> Result<ZramMmStat, CounterError> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        let v = counter_fields("zram mm_stat", &fields, 8, 9)?;
        Ok(ZramMmStat {
            orig_data_size: v[0],
            compr_data_size: v[1],
            mem_used_total: v[2],
            mem_limit: v[3],
            mem_used_max: v[4],
            same_pages: v[5],
            pages_compacted: v[6],
            huge_pages: v[7],
            huge_pages_since: v[8],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sys_stat_17_fields() {
        let s = DiskStats::parse_sys_stat(
            "      64        0   131072       12       64        0   131072      100        0       20      112    3 0 24 1 7 2\n",
        )
        .unwrap();
        assert_eq!(s.reads_completed, 64);
        assert_eq!(s.sectors_written, 131072);
        assert_eq!(s.bytes_written(), 64 << 20);
        assert_eq!(s.sectors_discarded, 24);
        assert_eq!(s.flush_ms, 2);
    }

    #[test]
    fn old_kernel_11_fields_and_errors() {
        let s = DiskStats::parse_sys_stat("1 2 3 4 5 6 7 8 9 10 11").unwrap();
        assert_eq!(s.weighted_io_ms, 11);
        assert_eq!(s.flushes_completed, 0);
        assert!(matches!(
            DiskStats::parse_sys_stat("1 2 3"),
            Err(CounterError::TooFewFields { found: 3, .. })
        ));
        assert!(matches!(
            DiskStats::parse_sys_stat("1 2 3 4 5 6 x 8 9 10 11"),
            Err(CounterError::NotANumber { index: 7, .. })
        ));
    }

    #[test]
    fn proc_diskstats_and_delta() {
        let text = " 254       0 vda 100 0 800 5 200 0 1600 9 0 10 14 0 0 0 0 3 1\n\n 252 0 zram0 1 0 8 0 2 0 16 0 0 0 0 0 0 0 0 0 0\n";
        let lines = parse_proc_diskstats(text).unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!((lines[1].major, lines[1].minor), (252, 0));
        assert_eq!(lines[1].name, "zram0");
        let d = lines[0].stats.delta_since(&lines[1].stats);
        assert_eq!(d.sectors_written, 1584);
        let back = lines[1].stats.delta_since(&lines[0].stats);
        assert_eq!(back.sectors_written, 0);
        assert_eq!(parse_proc_diskstats("8 0 sda 1 2").unwrap_err().0, 1);
    }

    #[test]
    fn zram_mm_stat() {
        let m =
            ZramMmStat::parse("134217728 17285056 17674240 0 67108864 16384 0 0 16384\n").unwrap();
        assert_eq!(m.orig_data_size, 134_217_728);
        assert_eq!(m.compr_data_size, 17_285_056);
        assert_eq!(m.same_pages, 16384);
        assert!(ZramMmStat::parse("1 2 3").is_err());
        assert!(ZramMmStat::parse("a b c d e f g h").is_err());
    }
}
