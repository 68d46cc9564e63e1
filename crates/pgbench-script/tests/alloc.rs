//! Expression evaluation and substitution stay off the allocator: once a client's
//! buffers have grown, a transaction of the builtin TPC-B script (or one substituting doubles, booleans,
//! NULL and `-D` text) allocates nothing, in
//! every query mode (counted by a global allocator; this test binary runs only this).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use csdchar_pgbench_script::{
    AutoValues, Client, ClientOptions, Context, NoHost, QueryMode, Reply, ResultKind, ScriptSet,
    SqlForm, Step, TxStatus, Version,
};

struct Counting;

thread_local! {
    // Only the test's own thread counts: the harness's other threads may
    // allocate meanwhile (seen on a loaded CI machine: 4 in one window).
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

/// Whether this thread counts its allocations now (false while the thread
/// is being torn down and its local is gone).
fn counting() -> bool {
    COUNTING.try_with(Cell::get).unwrap_or(false)
}

// Safety: every call is forwarded unchanged to the system allocator; the counter is an
// atomic and the flag a const-initialized thread local: neither allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // Safety: the caller's layout contract is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Safety: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // Safety: as for `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A reply without allocations: one command completed, the block status as given.
struct Done(TxStatus);

impl Reply for Done {
    fn results(&self) -> usize {
        1
    }
    fn result(&self, _: usize) -> ResultKind<'_> {
        ResultKind::Command
    }
    fn columns(&self, _: usize) -> usize {
        0
    }
    fn column_name(&self, _: usize, _: usize) -> &[u8] {
        b""
    }
    fn value(&self, _: usize, _: usize, _: usize) -> Option<&[u8]> {
        None
    }
    fn status(&self) -> TxStatus {
        self.0
    }
}

fn transaction(c: &mut Client, now: &mut i64, sent: &mut usize) {
    let mut host = NoHost;
    let last = c.program().scripts()[0].commands().len() - 1;
    let mut status = TxStatus::Idle;
    c.begin(0, *now);
    loop {
        let mut cx = Context {
            now_us: *now,
            timer_exceeded: false,
            host: &mut host,
        };
        match c.next(&mut cx) {
            Step::Sql(r) => {
                *sent += match r.form {
                    SqlForm::Simple { text } => text.len(),
                    SqlForm::Extended { text, params } => {
                        text.len() + params.iter().flatten().map(<[u8]>::len).sum::<usize>()
                    }
                    SqlForm::Prepared { params, .. } => {
                        params.iter().flatten().map(<[u8]>::len).sum::<usize>()
                    }
                };
                // BEGIN opens the block, END (the last command) closes it.
                status = if r.command == last {
                    TxStatus::Idle
                } else {
                    TxStatus::InBlock
                };
            }
            Step::Prepare { .. } => {}
            Step::End(_) => continue,
            Step::Idle => return,
            s => panic!("unexpected {s:?}"),
        }
        *now += 50;
        let mut cx = Context {
            now_us: *now,
            timer_exceeded: false,
            host: &mut host,
        };
        c.on_reply(&Done(status), &mut cx);
    }
}

#[test]
fn a_tpcb_transaction_allocates_nothing() {
    // The builtin, and a script substituting doubles, booleans, NULL and -D text.
    let other = "\\set d random(1, 1000) / 7.0\n\\set b :d > 50\n\\set n NULL\n\\set h hash(:d * 1000)\nSELECT :d, :b, :n, :h, :region;\n";
    for (script, mode) in [
        (None, QueryMode::Simple),
        (None, QueryMode::Extended),
        (None, QueryMode::Prepared),
        (Some(other), QueryMode::Simple),
        (Some(other), QueryMode::Prepared),
    ] {
        let mut set = ScriptSet::new(Version::V18);
        match script {
            None => set.add_builtin("tpcb-like", 1).unwrap(),
            Some(s) => set.add_file(s.as_bytes(), "other.sql", 1).unwrap(),
        }
        set.define("region=eu-west").unwrap();
        let p = Arc::new(set.compile(mode).unwrap());
        let st = p.startup(1, 1, 1);
        let mut c = Client::new(
            Arc::clone(&p),
            0,
            st.clients[0],
            AutoValues {
                scale: 100,
                default_seed: st.default_seed.unwrap(),
                random_seed: 1,
            },
            ClientOptions::default(),
        );
        let (mut now, mut sent) = (0, 0);
        for _ in 0..50 {
            transaction(&mut c, &mut now, &mut sent);
        }
        ALLOCATIONS.store(0, Ordering::Relaxed);
        COUNTING.set(true);
        for _ in 0..1000 {
            transaction(&mut c, &mut now, &mut sent);
        }
        COUNTING.set(false);
        assert!(sent > 0);
        let last = c.command_stats()[0].len() - 1;
        assert_eq!(c.command_stats()[0][last].count, 1050, "{mode:?}");
        assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), 0, "{mode:?}");
    }
    // The counter does see this thread's allocations.
    COUNTING.set(true);
    let probe = std::hint::black_box(Vec::<u8>::with_capacity(8));
    COUNTING.set(false);
    drop(probe);
    assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), 1);
}
