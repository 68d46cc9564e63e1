//! How a job's I/Os are generated and paced beyond its rate: fio's
//! `blockalign` (where random I/Os may start), `io_submit_mode` (whether rated
//! submissions wait for completions) and `random_generator` (independent
//! draws, or every block once per pass). No clock, no random source.

use serde::{Deserialize, Serialize};

/// fio's `random_generator`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RandomGenerator {
    /// Each random block drawn independently and uniformly (fio's
    /// `tausworthe` and `tausworthe64` with `norandommap`; csdchar's own
    /// generator is xoshiro256++).
    #[default]
    Uniform,
    /// Every block of the region exactly once per pass, in a pseudo-random
    /// order (fio's `lfsr`); a pass ends the job unless it is time_based,
    /// which starts the same order again.
    Lfsr,
}

/// A job's pacing options; the default is fio's.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Pacing {
    /// fio's `blockalign` per direction [read, write, trim], bytes: random
    /// offsets are multiples of it; 0: the direction's smallest block size
    /// (fio's default). Sequential I/O ignores it, as fio does.
    #[serde(default, skip_serializing_if = "is_zero3")]
    pub blockalign: [u64; 3],
    /// fio's `io_submit_mode=offload`: a rated job issues each I/O when it is
    /// due whatever is in flight; false (`inline`): ahead of the rate, the job
    /// first waits for everything in flight, then sleeps.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub offload: bool,
    /// How random blocks are chosen (fio's `random_generator`).
    #[serde(default, skip_serializing_if = "RandomGenerator::is_uniform")]
    pub generator: RandomGenerator,
}

fn is_zero3(a: &[u64; 3]) -> bool {
    *a == [0; 3]
}

impl RandomGenerator {
    /// Whether it is the default (independent uniform draws).
    pub fn is_uniform(&self) -> bool {
        *self == RandomGenerator::Uniform
    }
}

impl Pacing {
    /// Whether every option is fio's default.
    pub fn is_none(&self) -> bool {
        *self == Pacing::default()
    }

    /// The unit random offsets of direction `d` are counted in: `blockalign`,
    /// or `unit` (the direction's smallest block size) without it.
    pub fn align(&self, d: usize, unit: u64) -> u64 {
        match self.blockalign[d] {
            0 => unit,
            a => a,
        }
    }

    /// Random starting blocks (of [`Pacing::align`] bytes) of direction `d`
    /// in a region of `size` bytes whose smallest I/O is `unit` bytes: fio's
    /// `last_block` (an I/O of the smallest size ends inside the region).
    pub fn random_blocks(&self, d: usize, unit: u64, size: u64) -> u64 {
        let align = self.align(d, unit).max(1);
        size.saturating_sub(unit.saturating_sub(align)) / align
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blockalign_counts_fio_last_block() {
        let p = Pacing {
            blockalign: [4096, 4096, 0],
            ..Pacing::default()
        };
        // Smaller I/Os than the alignment: every aligned start fits.
        assert_eq!(p.random_blocks(0, 512, 1 << 20), 256);
        // Larger I/Os: the last start leaves room for the smallest one.
        assert_eq!(
            p.random_blocks(1, 16384, 1 << 20),
            (1_048_576 - 12288) / 4096
        );
        // No blockalign: the direction's own unit.
        assert_eq!(p.align(2, 8192), 8192);
        assert_eq!(p.random_blocks(2, 8192, 1 << 20), 128);
    }
}
