use super::*;

fn zbd(size: u64) -> ZoneSpec {
    ZoneSpec {
        mode: ZoneMode::Zbd,
        size,
        ..ZoneSpec::default()
    }
}

#[test]
fn strided_moves_the_window_after_zonesize_bytes_and_wraps() {
    let z = ZoneSpec {
        mode: ZoneMode::Strided,
        size: 2048,
        range: 2048,
        skip: 4096,
        ..ZoneSpec::default()
    };
    let mut s = Strided::new(&z, 0, 10240);
    let offs: Vec<u64> = (0..8).map(|_| s.next_seq(0, 1024).unwrap()).collect();
    // Two blocks per window, windows 6144 apart, back to the start past the end.
    assert_eq!(offs, [0, 1024, 6144, 7168, 0, 1024, 6144, 7168]);
}

#[test]
fn strided_repeats_a_window_smaller_than_zonesize() {
    let z = ZoneSpec {
        mode: ZoneMode::Strided,
        size: 4096,
        range: 2048,
        ..ZoneSpec::default()
    };
    let mut s = Strided::new(&z, 0, 1 << 20);
    let offs: Vec<u64> = (0..6).map(|_| s.next_seq(0, 1024).unwrap()).collect();
    assert_eq!(offs, [0, 1024, 0, 1024, 2048, 3072]);
}

#[test]
fn sequential_writes_fill_zones_at_the_write_pointer() {
    let mut t = ZoneTable::new(&zbd(4096), 4 * 4096).unwrap();
    let mut j = t.job(0, 4 * 4096, false, [1024; 3]);
    for i in 0..16u64 {
        let p = t.adjust(&mut j, 1, i * 1024, 1024).unwrap();
        assert_eq!(
            p,
            Placed::Io {
                offset: i * 1024,
                len: 1024,
                reset: false
            }
        );
    }
    assert_eq!(t.with_data, 4 * 4096);
    // The region is full: the next write resets the zone it lands in.
    let p = t.adjust(&mut j, 1, 0, 1024).unwrap();
    assert_eq!(
        p,
        Placed::Io {
            offset: 0,
            len: 1024,
            reset: true
        }
    );
    assert_eq!(t.resets, 1);
}

#[test]
fn random_writes_stay_in_at_most_max_open_zones() {
    let spec = ZoneSpec {
        max_open: 2,
        ..zbd(8192)
    };
    let mut t = ZoneTable::new(&spec, 16 * 8192).unwrap();
    let mut j = t.job(0, 16 * 8192, true, [512; 3]);
    let mut zones = std::collections::BTreeSet::new();
    for i in 0..16u64 {
        // Offsets spread over the region, as random draws are.
        let off = (i * 7 % 16) * 8192 + 512;
        match t.adjust(&mut j, 1, off, 512).unwrap() {
            Placed::Io { offset, .. } => {
                zones.insert(offset / 8192);
            }
            Placed::End => panic!("a write found no zone"),
        }
    }
    // 16 writes of 512 bytes fit two zones of 8 KiB: nothing else is opened.
    assert!(zones.len() <= 2, "{zones:?}");
    assert_eq!(t.with_data, 16 * 512);
}

#[test]
fn reads_stay_below_the_write_pointer() {
    let mut t = ZoneTable::new(&zbd(4096), 4 * 4096).unwrap();
    let mut j = t.job(0, 4 * 4096, false, [1024; 3]);
    // Nothing written: a sequential read finds no data.
    assert_eq!(t.adjust(&mut j, 0, 0, 1024).unwrap(), Placed::End);
    let mut w = t.job(0, 4 * 4096, false, [1024; 3]);
    t.adjust(&mut w, 1, 4096, 1024).unwrap();
    // A read in the empty zone 0 moves to zone 1, which holds 1 KiB.
    assert_eq!(
        t.adjust(&mut j, 0, 0, 2048).unwrap(),
        Placed::Io {
            offset: 4096,
            len: 1024,
            reset: false
        }
    );
}

#[test]
fn reset_threshold_and_frequency_reset_zones_early() {
    let spec = ZoneSpec {
        reset_threshold: 0.5,
        reset_frequency: 0.5,
        ..zbd(4096)
    };
    let mut t = ZoneTable::new(&spec, 4 * 4096).unwrap();
    let mut j = t.job(0, 4 * 4096, false, [1024; 3]);
    for i in 0..8u64 {
        t.adjust(&mut j, 1, i * 1024, 1024).unwrap();
    }
    assert_eq!(t.resets, 0, "below the threshold nothing is reset");
    // From half full on, every second write resets its zone first.
    let resets: Vec<bool> = (8..12u64)
        .map(|i| match t.adjust(&mut j, 1, i * 1024, 1024).unwrap() {
            Placed::Io { reset, .. } => reset,
            Placed::End => panic!("end"),
        })
        .collect();
    assert_eq!(resets, [false, true, false, true]);
}

#[test]
fn a_trim_resets_its_zone() {
    let mut t = ZoneTable::new(&zbd(4096), 2 * 4096).unwrap();
    let mut j = t.job(0, 2 * 4096, false, [1024, 1024, 4096]);
    t.adjust(&mut j, 1, 0, 1024).unwrap();
    let p = t.adjust(&mut j, 2, 0, 4096).unwrap();
    assert_eq!(
        p,
        Placed::Io {
            offset: 0,
            len: 4096,
            reset: true
        }
    );
    assert_eq!((t.wp(0), t.resets, t.with_data), (0, 1, 0));
    assert!(
        t.adjust(&mut j, 2, 1024, 4096).is_err(),
        "not at a zone's start"
    );
}

#[test]
fn a_sequential_writer_skips_past_the_zone_capacity() {
    let spec = ZoneSpec {
        capacity: 3072,
        ..zbd(4096)
    };
    let mut t = ZoneTable::new(&spec, 2 * 4096).unwrap();
    let mut j = t.job(0, 2 * 4096, false, [1024; 3]);
    let offs: Vec<u64> = (0..6u64)
        .map(|i| {
            // The job's next offset follows the last I/O's end.
            let planned = if i == 3 {
                3072
            } else {
                [0, 1024, 2048, 0, 5120, 6144][i as usize]
            };
            match t.adjust(&mut j, 1, planned, 1024).unwrap() {
                Placed::Io { offset, .. } => offset,
                Placed::End => panic!("end"),
            }
        })
        .collect();
    assert_eq!(offs, [0, 1024, 2048, 4096, 5120, 6144]);
}
