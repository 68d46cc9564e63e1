//! Verify headers: every written block starts with a header (magic, offset,
//! seed, sequence, length) and a crc32c of the whole block, so a read-back can
//! tell a good block from a corrupted, misplaced or stale one. With fio's
//! `verify_interval` each unit of a block carries its own header; with fio's
//! `verify=meta` the header is fio's own (see [`meta`]).

use csdchar_core::result::block::BlockSpec;

/// Bytes of each verify unit of a block of `len` bytes (fio's hdr_inc).
pub fn unit_len(spec: &BlockSpec, len: usize) -> usize {
    match spec.verify_interval as usize {
        0 => len,
        iv if iv >= len => len,
        iv => iv,
    }
}

/// Fills `block`, written at `offset`, for a verify write: the pattern (if
/// any) from the block's first byte, then a header at the start of each unit
/// (`seq`: csdchar's sequence; `numberio`, `thread`: fio's meta fields).
pub fn seal_block(block: &mut [u8], spec: &BlockSpec, offset: u64, seq: u64, thread: u16) {
    fill_pattern(block, &spec.verify_pattern);
    let unit = unit_len(spec, block.len());
    for (i, u) in block.chunks_mut(unit).enumerate() {
        let at = offset + (i * unit) as u64;
        if spec.verify_meta {
            // fio's numberio: the job's writes issued before this one.
            let numberio = (seq & 0xffff_ffff_ffff).wrapping_sub(1) as u16;
            // fio's rand_seed is the seed of the data: none for a pattern.
            let seed = if spec.verify_pattern.is_empty() {
                spec.seed
            } else {
                0
            };
            meta::seal(u, at, seed, thread, numberio);
        } else {
            seal(u, at, spec.seed, seq);
        }
    }
}

/// Checks `block` read back from `offset`, unit by unit; `Err((offset of the
/// first bad unit, why))`.
pub fn check_block(block: &[u8], spec: &BlockSpec, offset: u64) -> Result<(), (u64, String)> {
    let unit = unit_len(spec, block.len());
    // The pattern repeated over a unit and one pattern more: every unit's
    // data is a slice of it, from its phase.
    // Made once per job thread and pattern, not per block.
    thread_local! {
        static REPEATED: std::cell::RefCell<(Vec<u8>, Vec<u8>)> = Default::default();
    }
    let p = &spec.verify_pattern;
    let need = if p.is_empty() { 0 } else { unit + p.len() };
    REPEATED.with(|cell| {
        let mut cached = cell.borrow_mut();
        if cached.0 != *p || cached.1.len() < need {
            *cached = (p.clone(), repeated(p, need));
        }
        let rep = &cached.1;
        for (i, u) in block.chunks(unit).enumerate() {
            let at = offset + (i * unit) as u64;
            let r = if spec.verify_meta {
                meta::check(u, at)
                    .and_then(|()| check_pattern(u, i * unit, meta::HEADER_LEN, p, rep))
            } else {
                check(u, at, spec.seed)
            };
            r.map_err(|why| (at, why))?;
        }
        Ok(())
    })
}

/// fio's pattern check of a unit starting `from` bytes into its block: the
/// bytes after its header are the pattern repeated from the block's first
/// byte (nothing to check for an empty pattern); `rep`: the pattern repeated
/// from its first byte, a pattern longer than the unit.
fn check_pattern(
    unit: &[u8],
    from: usize,
    header: usize,
    pattern: &[u8],
    rep: &[u8],
) -> Result<(), String> {
    if pattern.is_empty() {
        return Ok(());
    }
    // One comparison of the whole data; byte by byte only to name a mismatch.
    let data = &unit[header.min(unit.len())..];
    let phase = (from + header) % pattern.len();
    if rep.get(phase..phase + data.len()) == Some(data) {
        return Ok(());
    }
    for (i, &b) in unit.iter().enumerate().skip(header) {
        let want = pattern[(from + i) % pattern.len()];
        if b != want {
            return Err(format!(
                "got pattern '{b:02x}', wanted '{want:02x}' at byte {} of the unit's data",
                i - header
            ));
        }
    }
    Ok(())
}

/// fio's kind of line for a verify that failed: where the first bad unit
/// is, why, and how many of the blocks checked were bad.
pub fn failure_line(
    target: Option<&str>,
    bs: u64,
    v: &csdchar_core::result::block::VerifyReport,
) -> String {
    let file = target.unwrap_or("(no file)");
    match v.bad_blocks.first() {
        Some(b) => format!(
            "verify: bad block at file {file} offset {}, length {bs} (LBA {}): {}; {} bad of {} \
             blocks checked",
            b.offset, b.lba, b.reason, v.bad_block_count, v.blocks_checked
        ),
        None => format!("verify: {} bad blocks in {file}", v.bad_block_count),
    }
}

/// Header magic.
pub const MAGIC: [u8; 8] = *b"CSDCHRv1";
/// Header bytes at the start of each block.
pub const HEADER_LEN: usize = 40;
const CRC_AT: usize = 36;

/// Writes the header into `block` and seals it with its checksum.
pub fn seal(block: &mut [u8], offset: u64, seed: u64, seq: u64) {
    block[0..8].copy_from_slice(&MAGIC);
    block[8..16].copy_from_slice(&offset.to_le_bytes());
    block[16..24].copy_from_slice(&seed.to_le_bytes());
    block[24..32].copy_from_slice(&seq.to_le_bytes());
    let len = block.len() as u32;
    block[32..36].copy_from_slice(&len.to_le_bytes());
    let crc = checksum(block);
    block[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
}

fn checksum(block: &[u8]) -> u32 {
    let crc = crc32c::crc32c(&block[..CRC_AT]);
    crc32c::crc32c_append(crc, &block[HEADER_LEN..])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// fio's verify_pattern: the block is `pattern` repeated from its first
/// byte, the headers written over it after (nothing to do for an empty one).
pub fn fill_pattern(block: &mut [u8], pattern: &[u8]) {
    if pattern.is_empty() {
        return;
    }
    // The first run by the pattern's length, then doubling copies of what is
    // filled (a short pattern copied a few bytes at a time costs a call each).
    let first = pattern.len().min(block.len());
    block[..first].copy_from_slice(&pattern[..first]);
    let mut done = first;
    while done < block.len() {
        let n = done.min(block.len() - done);
        block.copy_within(..n, done);
        done += n;
    }
}

/// `len` bytes of `pattern` repeated.
fn repeated(pattern: &[u8], len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    fill_pattern(&mut v, pattern);
    v
}

/// Checks a block read back from `offset`; `Err` says what is wrong. (With a
/// checksum, fio 3.33 checks the checksum only, not the verify_pattern the
/// data was written with: neither does this.)
pub fn check(block: &[u8], offset: u64, seed: u64) -> Result<(), String> {
    if block.len() < HEADER_LEN || block[0..8] != MAGIC {
        return Err("bad magic: not a block written by csdchar --verify".into());
    }
    let stored_len = u32::from_le_bytes(block[32..36].try_into().expect("4 bytes"));
    if stored_len as usize != block.len() {
        return Err(format!(
            "block length {stored_len} in header, {} expected",
            block.len()
        ));
    }
    let stored_crc = u32::from_le_bytes(block[CRC_AT..CRC_AT + 4].try_into().expect("4 bytes"));
    if stored_crc != checksum(block) {
        return Err("crc32c mismatch: data corrupted".into());
    }
    let at = u64_at(block, 8);
    if at != offset {
        return Err(format!("header says offset {at}: misplaced block"));
    }
    let s = u64_at(block, 16);
    if s != seed {
        return Err(format!("written with seed {s}, not {seed}: stale data"));
    }
    Ok(())
}

/// fio 3.33's `verify=meta` header (`struct verify_header`, little-endian):
/// magic 0xacca, verify type 1 (header only), unit length, seed, offset,
/// time (s, ns), thread number, numberio, and fio's crc32c (no final
/// inversion) of the 36 bytes before it. fio checks magic, length, seed,
/// offset and the header's crc; the seed it takes from the header itself
/// (a job that only reads or only writes), numberio it checks in the job
/// that wrote the blocks only (csdchar does not: see check), time and
/// thread never.
pub mod meta {
    /// Header bytes (fio's `sizeof(struct verify_header)`).
    pub const HEADER_LEN: usize = 40;
    const MAGIC: u16 = 0xacca;
    /// fio's VERIFY_HDR_ONLY, what `verify=meta` means in fio 3.33.
    const TYPE_HDR_ONLY: u16 = 1;

    /// fio's crc32c: Castagnoli from !0 with no final inversion.
    fn fio_crc32c(b: &[u8]) -> u32 {
        !crc32c::crc32c(b)
    }

    /// Writes fio's header at the start of `unit`, a unit written at `offset`.
    pub fn seal(unit: &mut [u8], offset: u64, seed: u64, thread: u16, numberio: u16) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        unit[0..2].copy_from_slice(&MAGIC.to_le_bytes());
        unit[2..4].copy_from_slice(&TYPE_HDR_ONLY.to_le_bytes());
        let len = unit.len() as u32;
        unit[4..8].copy_from_slice(&len.to_le_bytes());
        unit[8..16].copy_from_slice(&seed.to_le_bytes());
        unit[16..24].copy_from_slice(&offset.to_le_bytes());
        unit[24..28].copy_from_slice(&(now.as_secs() as u32).to_le_bytes());
        unit[28..32].copy_from_slice(&now.subsec_nanos().to_le_bytes());
        unit[32..34].copy_from_slice(&thread.to_le_bytes());
        unit[34..36].copy_from_slice(&numberio.to_le_bytes());
        let crc = fio_crc32c(&unit[..36]);
        unit[36..40].copy_from_slice(&crc.to_le_bytes());
    }

    /// Checks fio's header of a unit read back from `offset`, as fio 3.33's
    /// verify_header in a job that reads or writes only (magic, length,
    /// offset, header crc; not numberio, which fio checks in a write job
    /// that reads its blocks back).
    pub fn check(unit: &[u8], offset: u64) -> Result<(), String> {
        let u16_at = |a: usize| u16::from_le_bytes([unit[a], unit[a + 1]]);
        let u32_at = |a: usize| u32::from_le_bytes(unit[a..a + 4].try_into().expect("4 bytes"));
        let u64_at = |a: usize| u64::from_le_bytes(unit[a..a + 8].try_into().expect("8 bytes"));
        if unit.len() < HEADER_LEN || u16_at(0) != MAGIC {
            let m = if unit.len() >= 2 { u16_at(0) } else { 0 };
            return Err(format!("bad magic header {m:x}, wanted {MAGIC:x}"));
        }
        if u32_at(4) as usize != unit.len() {
            return Err(format!(
                "bad header length {}, wanted {}",
                u32_at(4),
                unit.len()
            ));
        }
        if u64_at(16) != offset {
            return Err(format!("bad header offset {}, wanted {offset}", u64_at(16)));
        }
        let crc = fio_crc32c(&unit[..36]);
        if crc != u32_at(36) {
            return Err(format!(
                "bad header crc {:x}, calculated {crc:x}",
                u32_at(36)
            ));
        }
        Ok(())
    }
}

/// fio's verify_dump files of a verify phase's jobs, `(name, bytes)`: each
/// bad block as read, in `<file name>.<offset>.received` (fio's dump_buf,
/// in the working directory). fio also writes `.expected`, the block
/// regenerated from its header's random seed; csdchar's block data is not
/// regenerable from its header, so it writes no `.expected`.
pub fn dump_files(spec: &BlockSpec, jobs: &[crate::outcome::JobOutcome]) -> Vec<(String, Vec<u8>)> {
    let file = spec.target.as_deref().unwrap_or("target");
    let base = std::path::Path::new(file)
        .file_name()
        .map_or_else(|| file.to_string(), |n| n.to_string_lossy().into_owned());
    (jobs.iter().flat_map(|j| &j.dumps))
        .map(|(offset, bytes)| (format!("{base}.{offset}.received"), bytes.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_fill_and_check_in_any_phase() {
        for len in 0..40 {
            let mut b = vec![0u8; len];
            fill_pattern(&mut b, b"xyz");
            let naive: Vec<u8> = (0..len).map(|k| b"xyz"[k % 3]).collect();
            assert_eq!(b, naive, "{len}");
        }
        // A 3-byte pattern over 80-byte units: each unit's data starts at a
        // different phase; a changed byte is named in every unit.
        let spec = BlockSpec {
            verify_meta: true,
            verify_interval: 80,
            verify_pattern: b"abc".to_vec(),
            ..BlockSpec::default()
        };
        let mut b = vec![0u8; 800];
        seal_block(&mut b, &spec, 4096, 1, 1);
        assert_eq!(check_block(&b, &spec, 4096), Ok(()));
        for u in 0..10 {
            let mut c = b.clone();
            c[u * 80 + 41 + u] ^= 1;
            let (at, why) = check_block(&c, &spec, 4096).unwrap_err();
            assert_eq!(at, 4096 + u as u64 * 80, "{why}");
            assert!(why.contains(&format!("at byte {}", 1 + u)), "{why}");
        }
    }

    #[test]
    fn seal_then_check() {
        let mut b = vec![7u8; 4096];
        seal(&mut b, 8192, 5, 1);
        assert_eq!(check(&b, 8192, 5), Ok(()));
        assert!(check(&b, 4096, 5).unwrap_err().contains("misplaced"));
        assert!(check(&b, 8192, 6).unwrap_err().contains("stale"));
        let mut c = b.clone();
        c[1000] ^= 1;
        assert!(check(&c, 8192, 5).unwrap_err().contains("crc32c"));
        let mut d = b.clone();
        d[30] ^= 1; // sequence is covered by the checksum too
        assert!(check(&d, 8192, 5).unwrap_err().contains("crc32c"));
        assert!(check(&[0u8; 4096], 0, 5).unwrap_err().contains("magic"));
        let mut p = vec![0u8; 4096];
        fill_pattern(&mut p, b"abc");
        assert_eq!(
            &p[44..47],
            b"cab",
            "aligned to the block's first byte, as fio's"
        );
        seal(&mut p, 0, 5, 1);
        assert_eq!(check(&p, 0, 5), Ok(()));
    }

    #[test]
    fn meta_headers_are_fio_s_per_interval_and_the_pattern_is_checked() {
        // A header fio 3.33 wrote (verify=meta, verify_interval=512, a
        // pattern): its crc is fio's crc32c of the 36 bytes before it.
        let mut fio_hdr = vec![0u8; 512];
        fio_hdr[..40].copy_from_slice(&[
            0xca, 0xac, 0x01, 0x00, 0x00, 0x02, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0x03, 0x8f, 0x87, 0x07, 0x01, 0x00, 0x00, 0x00, 0x3b, 0x69, 0x27,
            0xa3,
        ]);
        assert_eq!(meta::check(&fio_hdr, 0), Ok(()));
        assert!(meta::check(&fio_hdr, 512).unwrap_err().contains("offset"));

        let spec = BlockSpec {
            verify_meta: true,
            verify_interval: 512,
            verify_pattern: vec![0xaa, 0x55, 0x5a, 0xa5],
            ..BlockSpec::default()
        };
        let mut b = vec![0u8; 4096];
        seal_block(&mut b, &spec, 8192, 1, 1);
        assert_eq!(check_block(&b, &spec, 8192), Ok(()));
        for u in 0..8 {
            assert_eq!(
                &b[u * 512..u * 512 + 2],
                &[0xca, 0xac],
                "a header every 512 bytes"
            );
            let off = u64::from_le_bytes(b[u * 512 + 16..u * 512 + 24].try_into().unwrap());
            assert_eq!(off, 8192 + u as u64 * 512);
        }
        assert_eq!(
            &b[40..44],
            &[0xaa, 0x55, 0x5a, 0xa5],
            "from the block's first byte"
        );
        let mut c = b.clone();
        c[3 * 512 + 100] ^= 4;
        let (at, why) = check_block(&c, &spec, 8192).unwrap_err();
        assert_eq!(at, 8192 + 3 * 512);
        assert!(why.contains("pattern"), "{why}");
        let mut d = b.clone();
        d[5 * 512 + 33] ^= 1; // the thread: covered by the header's crc
        let (at, why) = check_block(&d, &spec, 8192).unwrap_err();
        assert_eq!((at, why.contains("crc")), (8192 + 5 * 512, true), "{why}");
        assert!(
            check_block(&b, &spec, 4096)
                .unwrap_err()
                .1
                .contains("offset")
        );

        // crc32c per unit: csdchar's header at each.
        let crc = BlockSpec {
            verify_interval: 1024,
            ..BlockSpec::default()
        };
        let mut e = vec![9u8; 4096];
        seal_block(&mut e, &crc, 0, 1, 1);
        assert_eq!(check_block(&e, &crc, 0), Ok(()));
        assert_eq!(&e[2048..2056], &MAGIC);
        e[2048 + 900] ^= 1;
        let (at, why) = check_block(&e, &crc, 0).unwrap_err();
        assert_eq!(at, 2048);
        assert!(why.contains("crc32c"), "{why}");
    }
}
