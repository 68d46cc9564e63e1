//! `bssplit` in a job: what csdchar runs of it and what it refuses (kept apart
//! from the option table in `mod.rs`).

use super::{Builder, MAX_BS};
use crate::bssplit::BsSplit;

impl Builder {
    /// The job's block-size lists as the engine runs them; a combination
    /// csdchar does not run goes to `lacks` and the lists are dropped.
    pub(super) fn bssplit_lacks(&self, lacks: &mut Vec<(&'static str, String)>) -> BsSplit {
        if self.bssplit.is_none() {
            return BsSplit::default();
        }
        let bs = self.bs.map(|b| b.unwrap_or(0));
        let skewed = !self.random_distribution.is_uniform();
        if let Err(why) = crate::bssplit::job_sizes(&self.bssplit, self.rw.directions(), bs, skewed)
        {
            lacks.push(("bssplit", why));
            return BsSplit::default();
        }
        let why = if self.verify {
            Some(
                "block-size mixes with verify (csdchar's verify writes and checks one block size)"
                    .to_string(),
            )
        } else if self.set_at.iter().any(|(n, _, _)| n == "bsrange") {
            Some("bssplit and bsrange in one job".into())
        } else {
            None
        };
        match why {
            Some(w) => {
                lacks.push(("bssplit", w));
                BsSplit::default()
            }
            None => self.bssplit.clone(),
        }
    }

    /// The offset unit and the lists the engine runs (a one-size list for a
    /// direction whose `bs` differs, as `bs=4k,64k` in a mixed job); what
    /// csdchar does not run goes to `lacks` with `bs`'s place, and the unit
    /// falls back to the reads' size.
    pub(super) fn sizes(
        &self,
        split: BsSplit,
        lacks: &mut Vec<(&'static str, String)>,
    ) -> (Option<u64>, BsSplit) {
        let bs = self.bs.map(|b| b.unwrap_or(0));
        let skewed = !self.random_distribution.is_uniform();
        match crate::bssplit::job_sizes(&split, self.rw.directions(), bs, skewed) {
            Ok((unit, lists)) => (Some(unit), lists),
            Err(why) => {
                lacks.push(("bs", why));
                (self.bs[0], BsSplit::default())
            }
        }
    }
}

impl Builder {
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
}
