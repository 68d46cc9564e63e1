//! Counter parsers on arbitrary input: a clear error or a value, never a panic.

use csdchar_core::capacity::{
    SfxCapacityStat, SfxExtendedHealth, SfxFreeSpace, SfxWriteCounters, SmartLog, ZramIoStat,
};
use csdchar_core::counters::{DiskStats, ZramMmStat, parse_proc_diskstats};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn binary_logs_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..700)) {
        let long_enough = |n: usize| bytes.len() >= n;
        prop_assert_eq!(SfxFreeSpace::parse(&bytes).is_ok(), long_enough(SfxFreeSpace::LEN));
        prop_assert_eq!(SfxExtendedHealth::parse(&bytes).is_ok(), long_enough(SfxExtendedHealth::LEN));
        prop_assert_eq!(SfxWriteCounters::parse(&bytes).is_ok(), long_enough(14 * 12));
        prop_assert_eq!(SmartLog::parse(&bytes).is_ok(), long_enough(SmartLog::LEN));
    }

    #[test]
    fn text_counters_never_panic(text in ".{0,400}", bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let lossy = String::from_utf8_lossy(&bytes).into_owned();
        for t in [&text, &lossy] {
            let _ = DiskStats::parse_sys_stat(t);
            let _ = parse_proc_diskstats(t);
            let _ = ZramMmStat::parse(t);
            let _ = ZramIoStat::parse(t);
            let s = SfxCapacityStat::parse(t);
            prop_assert!(s.raw.keys().all(|k| !k.is_empty()));
        }
    }

    /// Truncating a valid file gives an error (or fewer fields), never a wrong panic.
    #[test]
    fn truncated_mm_stat(cut in 0usize..60) {
        let full = "134217728 17285056 17674240 0 67108864 16384 0 0 16384\n";
        let t = &full[..cut.min(full.len())];
        let fields = t.split_whitespace().count();
        prop_assert_eq!(ZramMmStat::parse(t).is_ok(), fields >= 8);
    }
}
