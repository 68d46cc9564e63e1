//! `bssplit` in a job: what csdchar runs of it and what it refuses (kept apart
//! from the option table in `mod.rs`).

use super::{Builder, MAX_BS};
use crate::bssplit::BsSplit;
use crate::result::block::RwMode;

impl Builder {
    /// The job's block-size lists as the engine runs them; a combination
    /// csdchar does not run goes to `lacks` and the lists are dropped.
    pub(super) fn bssplit_lacks(&self, lacks: &mut Vec<(&'static str, String)>) -> BsSplit {
        if self.bssplit.is_none() {
            return BsSplit::default();
        }
        let why = if self.verify {
            Some(
                "block-size mixes with verify (csdchar's verify writes and checks one block size)"
                    .to_string(),
            )
        } else if matches!(self.rw, RwMode::Trimwrite | RwMode::Randtrimwrite) {
            Some(
                "block-size mixes with trimwrite (fio writes what it trimmed, size for size)"
                    .into(),
            )
        } else if self.set_at.iter().any(|(n, _, _)| n == "bsrange") {
            Some("bssplit and bsrange in one job".into())
        } else {
            let bs = self.bs.map(|b| b.unwrap_or(0));
            crate::bssplit::job_unit(&self.bssplit, self.rw, bs).err()
        };
        match why {
            Some(w) => {
                lacks.push(("bssplit", w));
                BsSplit::default()
            }
            None => self.bssplit.clone(),
        }
    }
}

/// Why a list cannot run at all (as fio refuses it too), if it cannot.
pub(super) fn bssplit_invalid(split: &BsSplit, direct: bool) -> Option<String> {
    let sizes = (0..3).flat_map(|d| split.list(d).iter().map(|e| e.bs));
    for bs in sizes {
        if bs > MAX_BS {
            return Some(format!("a block size of {bs} bytes, over 256m"));
        }
        if direct && !bs.is_multiple_of(512) {
            return Some(format!(
                "a block size of {bs} bytes, not a multiple of 512, with direct=1"
            ));
        }
    }
    None
}
