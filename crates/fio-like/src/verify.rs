//! Verify headers: every written block starts with a header (magic, offset,
//! seed, sequence, length) and a crc32c of the whole block, so a read-back can
//! tell a good block from a corrupted, misplaced or stale one.

/// fio's kind of line for a verify that failed: where the first bad block
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

/// fio's verify_pattern: the data after the header is `pattern` repeated
/// from the block's first byte (nothing to do for an empty one).
pub fn fill_pattern(block: &mut [u8], pattern: &[u8]) {
    if pattern.is_empty() {
        return;
    }
    for (i, b) in block.iter_mut().enumerate().skip(HEADER_LEN) {
        *b = pattern[i % pattern.len()];
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
