//! fio's `bssplit`: a mix of block sizes per direction, each with its share of
//! the I/Os (`bssplit=4k/10:64k/50:32k/40`, per direction `read,write,trim`
//! after commas), without a clock or a random source of its own.
//!
//! As fio reads and draws them (options.c `split_parse_ddir`, `bssplit_ddir`;
//! io_u.c `get_next_buflen`):
//! - an entry is `SIZE/PERCENT` or `SIZE`; a percentage left out (or 0) shares
//!   what the others leave of 100 equally (integer division); a percentage
//!   over 100 counts as 100; a list adding to more than 100 with more than one
//!   share left out is an error (csdchar also refuses one left out, where fio's
//!   arithmetic wraps around);
//! - an empty part (`,8k/50:16k/50`) leaves that direction as `bs` says; a
//!   list without commas is every direction's;
//! - the entries are sorted by percentage (stably), and a draw `r` of fio's
//!   32-bit generator takes the first entry whose running sum `p` has
//!   `r / p <= 0xffffffff / 100`: each entry gets its share, and what a list
//!   adding to less than 100 leaves goes to the entry with the largest share
//!   (the last one);
//! - a size is rounded down to a multiple of the smallest size of the list
//!   (fio's default `blocksize_unaligned=0`), and an I/O must end inside the
//!   region: a draw whose size would not fit is drawn again.

use serde::{Deserialize, Serialize};

/// Most entries of one direction's list (fio's `BSSPLIT_MAX`).
pub const MAX_ENTRIES: usize = 64;

/// One block size of a list and its share of the I/Os.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BsShare {
    /// Block size, bytes.
    pub bs: u64,
    /// Percent of the direction's I/Os (after fio's sharing of what was left out).
    pub percent: u32,
}

/// The block-size lists of a job, per direction [read, write, trim]; an empty
/// list: that direction's I/Os are all of the job's `bs`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BsSplit(pub [Vec<BsShare>; 3]);

impl BsSplit {
    /// Whether no direction has a list.
    pub fn is_none(&self) -> bool {
        self.0.iter().all(Vec::is_empty)
    }

    /// Direction `d`'s list, empty when it has none.
    pub fn list(&self, d: usize) -> &[BsShare] {
        &self.0[d]
    }

    /// Smallest size of direction `d`'s list (fio's `min_bs`), None without one.
    pub fn min_bs(&self, d: usize) -> Option<u64> {
        self.0[d].iter().map(|e| e.bs).min()
    }

    /// Largest size of direction `d`'s list (fio's `max_bs`), None without one.
    pub fn max_bs(&self, d: usize) -> Option<u64> {
        self.0[d].iter().map(|e| e.bs).max()
    }

    /// Reads fio's value: `LIST` for every direction, or `READ,WRITE,TRIM`
    /// (a missing trailing part takes the last one given, an empty part keeps
    /// the direction as it was in `self`). `bytes` reads one size as fio does
    /// (with the job's `kb_base`).
    pub fn parse(
        &mut self,
        text: &str,
        bytes: &dyn Fn(&str) -> Result<u64, String>,
    ) -> Result<(), String> {
        let parts = crate::fio_job::value::per_direction(text.trim());
        let mut out = self.0.clone();
        for (slot, part) in out.iter_mut().zip(parts) {
            if let Some(p) = part
                && let Some(list) = parse_direction(p, bytes)?
            {
                *slot = list;
            }
        }
        self.0 = out;
        Ok(())
    }

    /// fio's value again (every direction written out).
    pub fn to_fio(&self) -> String {
        self.0
            .iter()
            .map(|l| {
                l.iter()
                    .map(|e| format!("{}/{}", e.bs, e.percent))
                    .collect::<Vec<_>>()
                    .join(":")
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The size of the next I/O of direction `d` (fio's `get_next_buflen`):
    /// `draw` gives fio's 32-bit random numbers, `fits` says whether an I/O of
    /// that many bytes ends inside the region. None when even the smallest
    /// size does not fit (fio's job is then done with the file) or when the
    /// direction has no list.
    pub fn next_len(
        &self,
        d: usize,
        draw: &mut dyn FnMut() -> u32,
        fits: &dyn Fn(u64) -> bool,
    ) -> Option<u64> {
        let list = &self.0[d];
        let (min, max) = (self.min_bs(d)?, self.max_bs(d)?);
        if min == max {
            return Some(min);
        }
        if !fits(min) {
            return None;
        }
        let limit = u64::from(u32::MAX) / 100;
        loop {
            let r = u64::from(draw());
            let mut len = 0u64;
            let mut sum = 0u64;
            for e in list.iter().filter(|e| e.percent > 0) {
                len = e.bs;
                sum += u64::from(e.percent);
                if r / sum <= limit && fits(len) {
                    break;
                }
            }
            len -= len % min;
            len = len.min(max);
            if fits(len) && len > 0 {
                return Some(len);
            }
        }
    }
}

/// The directions a job's mode uses (reads, writes, trims) and whether it is
/// trimwrite (which writes what it trimmed, size for size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Directions {
    /// Reads, writes, trims: whether the mode does each.
    pub used: [bool; 3],
    /// `rw=trimwrite` or `randtrimwrite`.
    pub trimwrite: bool,
}

/// The sizes a job of mode `rw` runs with, from its lists `split` and its
/// per-direction `bs` (fio's `bs=R,W,T`): the unit its offsets are counted in
/// (the smallest size of the directions it uses) and the lists, with a
/// one-size list for a direction it uses whose size differs from the unit
/// (each direction's offsets are multiples of its own smallest size, fio's
/// `min_bs` and `blockalign`). Err names what csdchar does not run: lists or
/// unequal sizes with trimwrite, unequal sizes with a skewed
/// `random_distribution` (`skewed`).
pub fn job_sizes(
    split: &BsSplit,
    rw: Directions,
    bs: [u64; 3],
    skewed: bool,
) -> Result<(u64, BsSplit), String> {
    let used = rw.used;
    let min = |d: usize| split.min_bs(d).unwrap_or(bs[d]);
    let unit = (0..3).filter(|&d| used[d]).map(min).min().unwrap_or(bs[0]);
    let trimwrite = rw.trimwrite;
    if trimwrite && !split.is_none() {
        return Err(
            "block-size mixes with trimwrite (fio writes what it trimmed, size for size)".into(),
        );
    }
    let Some(other) = (0..3).find(|&d| used[d] && min(d) != unit) else {
        return Ok((unit, split.clone()));
    };
    let names = ["reads", "writes", "trims"];
    let sizes = format!(
        "{} of {} bytes and {} of {}",
        names[(0..3).find(|&d| used[d] && min(d) == unit).unwrap_or(0)],
        unit,
        names[other],
        min(other)
    );
    if trimwrite {
        return Err(format!(
            "trimwrite with {sizes} (fio writes what it trimmed, size for size)"
        ));
    }
    if skewed {
        return Err(format!(
            "a skewed random_distribution with {sizes} (csdchar draws skewed blocks in one size)"
        ));
    }
    let mut out = split.clone();
    for d in (0..3).filter(|&d| used[d]) {
        if out.0[d].is_empty() {
            out.0[d] = vec![BsShare {
                bs: bs[d],
                percent: 100,
            }];
        }
    }
    Ok((unit, out))
}

/// One direction's list, fio's `bssplit_ddir`; None for an empty text.
fn parse_direction(
    text: &str,
    bytes: &dyn Fn(&str) -> Result<u64, String>,
) -> Result<Option<Vec<BsShare>>, String> {
    // Entries with the percentage as written; None: left out.
    let mut entries: Vec<(u64, Option<u32>)> = Vec::new();
    for item in text.split(':') {
        // fio stops at the first empty entry.
        if item.is_empty() {
            break;
        }
        if entries.len() == MAX_ENTRIES {
            return Err(format!("at most {MAX_ENTRIES} block sizes per direction"));
        }
        let (size, perc) = match item.split_once('/') {
            Some((s, p)) => (s, Some(atoi(p).min(100))),
            None => (item, None),
        };
        let bs = bytes(size.trim())?;
        if bs == 0 {
            return Err(format!("'{item}': a block size must be positive"));
        }
        // A percentage of 0 is one left out (fio's -1U).
        entries.push((bs, perc.filter(|&p| p > 0)));
    }
    if entries.is_empty() {
        return Ok(None);
    }
    let given: u32 = entries.iter().filter_map(|e| e.1).sum();
    let missing = entries.iter().filter(|e| e.1.is_none()).count() as u32;
    if given > 100 && missing > 0 {
        return Err(format!(
            "'{text}': the percentages add to {given}, more than 100, and some are left out"
        ));
    }
    // One size alone: fio leaves its share at 0 and never looks at it (its
    // smallest size is its largest); csdchar says 100.
    let (given, missing) = if missing == 1 && entries.len() == 1 {
        (0, 1)
    } else {
        (given, missing)
    };
    let mut list: Vec<BsShare> = entries
        .into_iter()
        .map(|(bs, p)| BsShare {
            bs,
            percent: p.unwrap_or_else(|| (100 - given) / missing.max(1)),
        })
        .collect();
    // fio sorts by percentage for its lookup.
    list.sort_by_key(|e| e.percent);
    Ok(Some(list))
}

/// C's `atoi`: leading blanks, a sign, digits; 0 when there are none.
fn atoi(text: &str) -> u32 {
    let t = text.trim_start();
    let t = t.strip_prefix('+').unwrap_or(t);
    if t.starts_with('-') {
        return 0;
    }
    let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
    digits
        .parse::<u64>()
        .map_or(if digits.is_empty() { 0 } else { u32::MAX }, |n| {
            n.min(u64::from(u32::MAX)) as u32
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(t: &str) -> Result<u64, String> {
        crate::fio_job::value::bytes(t, 1024).map_err(|e| e.to_string())
    }

    fn parsed(text: &str) -> BsSplit {
        let mut s = BsSplit::default();
        s.parse(text, &bytes).unwrap();
        s
    }

    #[test]
    fn left_out_shares_split_the_rest_and_the_list_is_sorted() {
        let s = parsed("4k/10:64k/50:32k");
        let want = vec![
            BsShare {
                bs: 4096,
                percent: 10,
            },
            BsShare {
                bs: 32768,
                percent: 40,
            },
            BsShare {
                bs: 65536,
                percent: 50,
            },
        ];
        assert_eq!(s.0, [want.clone(), want.clone(), want]);
        let s = parsed("4k:8k:16k");
        assert!(s.list(0).iter().all(|e| e.percent == 33));
        // One size alone is every I/O.
        assert_eq!(
            parsed("8k").list(1),
            [BsShare {
                bs: 8192,
                percent: 100
            }]
        );
    }

    #[test]
    fn directions_follow_fio_s_commas() {
        let s = parsed("4k/50:8k/50,16k/100");
        assert_eq!(s.min_bs(0), Some(4096));
        assert_eq!(s.min_bs(1), Some(16384));
        assert_eq!(s.min_bs(2), Some(16384), "trim takes the last part");
        let s = parsed(",8k/20:16k/80,");
        assert!(s.list(0).is_empty() && s.list(2).is_empty());
        assert_eq!(s.max_bs(1), Some(16384));
    }

    #[test]
    fn bad_lists_are_refused() {
        let mut s = BsSplit::default();
        assert!(s.parse("4k/60:8k/60:16k:32k", &bytes).is_err());
        assert!(s.parse("4k/60:8k/60:16k", &bytes).is_err());
        assert!(s.parse("0/50:4k/50", &bytes).is_err());
        assert!(s.parse("x/50", &bytes).is_err());
    }

    /// fio's draw over a full 32-bit range gives each entry its share; what a
    /// short list leaves goes to the largest share.
    #[test]
    fn draws_give_each_size_its_share() {
        let count = |s: &BsSplit| {
            let mut seen = std::collections::BTreeMap::new();
            let n = 100_000u64;
            let mut k = 0u64;
            for _ in 0..n {
                // An even sweep over the generator's range.
                let mut draw = || {
                    k += 1;
                    ((k * u64::from(u32::MAX)) / n) as u32
                };
                let len = s.next_len(0, &mut draw, &|_| true).unwrap();
                *seen.entry(len).or_insert(0u64) += 1;
            }
            seen.into_iter()
                .map(|(bs, c)| (bs, (c as f64 / n as f64 * 100.0).round() as u64))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            count(&parsed("4k/10:64k/50:32k/40")),
            [(4096, 10), (32768, 40), (65536, 50)]
        );
        assert_eq!(count(&parsed("4k/10:8k/20")), [(4096, 10), (8192, 90)]);
        // Sizes round down to a multiple of the smallest: 6k is 4k.
        assert_eq!(count(&parsed("4k/50:6k/50")), [(4096, 100)]);
    }

    #[test]
    fn a_size_that_does_not_fit_is_drawn_again() {
        let s = parsed("4k/50:64k/50");
        let mut x = 0u32;
        let mut draw = || {
            x = x.wrapping_add(0x9E37_79B9);
            x
        };
        for _ in 0..100 {
            assert_eq!(s.next_len(0, &mut draw, &|l| l <= 8192), Some(4096));
        }
        assert_eq!(s.next_len(0, &mut draw, &|l| l < 4096), None);
    }
}
