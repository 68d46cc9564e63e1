//! A job over several files (fio's `nrfiles`): the files and their sizes, and
//! which file each I/O goes to — fio's `file_service_type` (`roundrobin`,
//! `sequential`, `random`, each with `:N` I/Os before the next choice, and
//! `zipf`, `pareto`, `normal`/`gauss` draws of the file) and `openfiles` (at
//! most that many open at once), as io_u.c's get_next_file picks them. Pure:
//! the engine asks, this answers.

use serde::{Deserialize, Serialize};

use crate::distribution::{BlockPicker, Distribution};

/// fio's `FIO_FSERVICE_SHIFT`: a skewed file choice draws among
/// `files << 10` ranges, the file being the range shifted back.
const SERVICE_SHIFT: u32 = 10;

/// One of a job's files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobFile {
    /// Path of the file.
    pub path: String,
    /// Bytes of the file the job works on, from the spec's `offset` (fio's per-file io_size:
    /// `size` split evenly over the files, or `filesize` less `offset`).
    pub size: u64,
}

/// How the next file is chosen (fio's `file_service_type`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ServiceKind {
    /// The files in turn (fio's default).
    #[default]
    Roundrobin,
    /// One file until it is done, then the next.
    Sequential,
    /// A file drawn uniformly, or from `skew`.
    Random,
}

/// fio's `file_service_type`: the choice and how many I/Os go to a file
/// before the next choice (the `:N` suffix).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileService {
    /// How the file is chosen.
    pub kind: ServiceKind,
    /// I/Os to the chosen file before choosing again (fio's `:N`; 1 by default).
    pub ios: u32,
    /// fio's `zipf`, `pareto` or `normal` file choice (kind `random`): files drawn from this
    /// distribution, hot files first, and never done (fio resets them instead); absent: uniform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew: Option<Distribution>,
}

impl Default for FileService {
    fn default() -> Self {
        FileService {
            kind: ServiceKind::Roundrobin,
            ios: 1,
            skew: None,
        }
    }
}

impl FileService {
    /// Whether files are drawn from a skewed distribution: fio then starts
    /// a file over instead of marking it done (`__FIO_FSERVICE_NONUNIFORM`).
    pub fn nonuniform(&self) -> bool {
        self.skew.is_some()
    }
}

/// A job's files when it has more than one; none: the job's one file is its `target`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobFiles {
    /// The files in fio's order (`filenum` 0, 1, …); the spec's `target` is the first.
    pub files: Vec<JobFile>,
    /// How each I/O's file is chosen.
    #[serde(default)]
    pub service: FileService,
    /// At most this many files open at once (fio's `openfiles`, clamped to the number of files).
    #[serde(default)]
    pub open: u32,
}

impl JobFiles {
    /// Whether the job has one file (its target).
    pub fn is_none(&self) -> bool {
        self.files.is_empty()
    }
}

/// The file of each I/O, as fio's `__get_next_file` chooses it: the current
/// file while it has I/Os left (`sequential`: until it is done), else the
/// next in turn or a random one; a file not open yet is opened only while
/// fewer than `openfiles` are (fio answers EBUSY and tries again further on,
/// which comes to the same choice); a done file is closed and never chosen.
#[derive(Debug, Clone)]
pub struct FileChooser {
    kind: ServiceKind,
    ios: u32,
    /// fio's next_file_zipf/next_file_gauss, unhashed.
    skew: Option<BlockPicker>,
    max_open: usize,
    open: Vec<bool>,
    done: Vec<bool>,
    nr_open: usize,
    nr_done: usize,
    next: usize,
    cur: Option<usize>,
    left: u32,
}

impl FileChooser {
    /// A chooser over `n` files (n ≥ 1); `open` 0 or above `n`: all;
    /// `seed` seeds a skewed choice.
    pub fn new(n: usize, service: &FileService, open: u32, seed: u32) -> Self {
        let max_open = match open as usize {
            0 => n,
            k => k.min(n),
        };
        FileChooser {
            kind: service.kind,
            ios: service.ios,
            skew: service
                .skew
                .as_ref()
                .map(|d| BlockPicker::new(d, (n as u64) << SERVICE_SHIFT, 1, seed).unhashed()),
            max_open,
            open: vec![false; n],
            done: vec![false; n],
            nr_open: 0,
            nr_done: 0,
            next: 0,
            cur: None,
            left: 0,
        }
    }

    /// The file of the next I/O; None once every file is done. `draw(n)`
    /// gives a uniform number below `n` (for `random`).
    pub fn next(&mut self, draw: &mut dyn FnMut(u64) -> u64) -> Option<usize> {
        let n = self.open.len();
        if self.nr_done >= n {
            return None;
        }
        if let Some(c) = self.cur
            && self.open[c]
        {
            if self.kind == ServiceKind::Sequential {
                return Some(c);
            }
            if self.left > 0 {
                self.left -= 1;
                return Some(c);
            }
        }
        let f = loop {
            let f = match (self.kind, &mut self.skew) {
                (ServiceKind::Random, Some(p)) => (p.next(0, draw) >> SERVICE_SHIFT) as usize,
                (ServiceKind::Random, None) => draw(n as u64) as usize,
                _ => {
                    let f = self.next;
                    self.next = (f + 1) % n;
                    f
                }
            };
            if self.done[f] {
                continue;
            }
            if !self.open[f] {
                if self.nr_open >= self.max_open {
                    continue;
                }
                self.open[f] = true;
                self.nr_open += 1;
            }
            break f;
        };
        self.cur = Some(f);
        self.left = self.ios.max(1) - 1;
        Some(f)
    }

    /// File `f` has no I/O left: it is closed and never chosen again.
    pub fn set_done(&mut self, f: usize) {
        if self.done[f] {
            return;
        }
        self.done[f] = true;
        self.nr_done += 1;
        if self.open[f] {
            self.open[f] = false;
            self.nr_open -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(kind: ServiceKind, ios: u32) -> FileService {
        FileService {
            kind,
            ios,
            skew: None,
        }
    }

    /// The files of `count` I/Os, each file done after `per_file` of them.
    fn run(mut c: FileChooser, n: usize, per_file: usize, count: usize) -> Vec<usize> {
        let mut issued = vec![0; n];
        let mut state = 12345u64;
        let mut draw = |k: u64| {
            state = crate::pattern::mix64(state);
            state % k
        };
        let mut out = Vec::new();
        while out.len() < count {
            let Some(f) = c.next(&mut draw) else { break };
            out.push(f);
            issued[f] += 1;
            if issued[f] == per_file {
                c.set_done(f);
            }
        }
        out
    }

    #[test]
    fn roundrobin_takes_the_files_in_turn_n_ios_each() {
        let c = FileChooser::new(3, &service(ServiceKind::Roundrobin, 1), 0, 1);
        assert_eq!(run(c, 3, 2, 10), [0, 1, 2, 0, 1, 2]);
        let c = FileChooser::new(3, &service(ServiceKind::Roundrobin, 2), 0, 1);
        assert_eq!(run(c, 3, 4, 7), [0, 0, 1, 1, 2, 2, 0]);
    }

    #[test]
    fn sequential_stays_on_a_file_until_it_is_done() {
        let c = FileChooser::new(3, &service(ServiceKind::Sequential, 1), 0, 1);
        assert_eq!(run(c, 3, 2, 10), [0, 0, 1, 1, 2, 2]);
    }

    #[test]
    fn openfiles_holds_the_others_back_until_one_is_done() {
        let c = FileChooser::new(4, &service(ServiceKind::Roundrobin, 1), 2, 1);
        assert_eq!(run(c, 4, 2, 20), [0, 1, 0, 1, 2, 3, 2, 3]);
        let c = FileChooser::new(4, &service(ServiceKind::Random, 1), 1, 1);
        let order = run(c, 4, 3, 20);
        assert_eq!(order.len(), 12);
        // One file at a time: each file's I/Os come together.
        for w in order.chunks(3) {
            assert!(w.iter().all(|f| *f == w[0]), "{order:?}");
        }
    }

    #[test]
    fn random_draws_among_the_files_left() {
        let c = FileChooser::new(4, &service(ServiceKind::Random, 1), 0, 1);
        let order = run(c, 4, 50, 1000);
        assert_eq!(order.len(), 200);
        let mut counts = [0; 4];
        for f in &order {
            counts[*f] += 1;
        }
        assert_eq!(counts, [50; 4]);
        // Not in turn: the same file twice in a row often.
        let repeats = order.windows(2).filter(|w| w[0] == w[1]).count();
        assert!(repeats > 20, "{repeats}");
    }

    #[test]
    fn a_zipf_choice_favours_the_first_files_from_its_center() {
        let skew = Distribution::parse("zipf:1.2:0", 1024).unwrap();
        let s = FileService {
            kind: ServiceKind::Random,
            ios: 1,
            skew: Some(skew),
        };
        assert!(s.nonuniform());
        let mut c = FileChooser::new(8, &s, 0, 7);
        let mut counts = [0u32; 8];
        for _ in 0..10_000 {
            counts[c.next(&mut |k| k / 2).unwrap()] += 1;
        }
        // Unhashed ranks from center 0: file 0 holds the hottest ranges.
        assert!(counts[0] > 5_000, "{counts:?}");
        let (first, rest) = counts.split_at(4);
        assert!(
            first.iter().sum::<u32>() > 2 * rest.iter().sum::<u32>(),
            "{counts:?}"
        );
    }
}
