//! fio's think time (`thinktime`, `thinktime_spin`, `thinktime_blocks`,
//! `thinktime_blocks_type`): a job stops after every so many I/Os, lets
//! everything in flight complete, spins, then sleeps (backend.c,
//! `handle_thinktime`).

use serde::{Deserialize, Serialize};

/// What counts towards `thinktime_blocks` (fio's `thinktime_blocks_type`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ThinkCount {
    /// I/Os completed (fio's default, `complete`).
    #[default]
    Complete,
    /// I/Os issued (`issue`).
    Issue,
}

/// A job's think time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThinkTime {
    /// Whole pause after each period, µs (spin included); 0: no think time.
    pub think_us: u64,
    /// Part of the pause spent spinning on the CPU, µs (the rest is slept).
    #[serde(default)]
    pub spin_us: u64,
    /// I/Os between pauses (fio's `thinktime_blocks`, default 1).
    pub blocks: u64,
    /// Whether the I/Os are counted when they complete or when they are issued.
    #[serde(default)]
    pub count: ThinkCount,
}

impl Default for ThinkTime {
    fn default() -> Self {
        ThinkTime {
            think_us: 0,
            spin_us: 0,
            blocks: 1,
            count: ThinkCount::Complete,
        }
    }
}

impl ThinkTime {
    /// The count `thinktime_blocks` is compared with (fio's
    /// `thinktime_blocks_counter`): I/Os completed or issued.
    pub fn counted(&self, completed: u64, issued: u64) -> u64 {
        match self.count {
            ThinkCount::Complete => completed,
            ThinkCount::Issue => issued,
        }
    }

    /// No think time.
    pub fn is_none(&self) -> bool {
        self.think_us == 0
    }

    /// Whether a job whose counter (completed or issued I/Os, as `count`
    /// says) stands at `counted`, and stood at `last` after its previous
    /// pause, pauses now (fio: `b >= last_thinktime_blocks + thinktime_blocks`).
    pub fn due(&self, counted: u64, last: u64) -> bool {
        !self.is_none() && counted >= last.saturating_add(self.blocks)
    }

    /// The pause's spin and sleep, µs, each cut to `left_us` of run time left
    /// as fio cuts them to the job's `runtime`.
    pub fn split(&self, left_us: u64) -> (u64, u64) {
        let spin = self.spin_us.min(left_us);
        let sleep = self.think_us.saturating_sub(spin).min(left_us - spin);
        (spin, sleep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_every_blocks_ios_and_cuts_to_the_runtime() {
        let t = ThinkTime {
            think_us: 1000,
            spin_us: 300,
            blocks: 4,
            count: ThinkCount::Issue,
        };
        assert!(!t.due(3, 0));
        assert!(t.due(4, 0));
        assert!(!t.due(7, 4));
        assert_eq!(t.split(u64::MAX), (300, 700));
        assert_eq!(t.split(500), (300, 200));
        assert_eq!(t.split(100), (100, 0));
        assert!(!ThinkTime::default().due(10, 0));
    }
}
