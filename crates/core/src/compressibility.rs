//! How well data compresses when every 4 KiB page is compressed on its own —
//! the way zram, a ScaleFlux CSD or a btrfs extent sees it, not a whole stream.
//!
//! Each page's stored size is capped at the page size: a drive stores an
//! incompressible page raw (zram counts it as 4096 in `compr_data_size`).

use miniz_oxide::deflate::core::{
    CompressionStrategy, CompressorOxide, TDEFLFlush, TDEFLStatus, compress,
    create_comp_flags_from_zip_params,
};
use serde::{Deserialize, Serialize};

/// The page size compressing drives work in.
pub const PAGE: usize = 4096;

/// A per-page compression model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Codec {
    /// LZ4 block format, reference implementation at the default level — what zram's `lz4` backend stores.
    Lz4,
    /// Raw deflate, level 6, dynamic Huffman: the optimistic bound for a zlib drive.
    Deflate,
    /// Raw deflate, level 1, fixed Huffman codes: tracks published CSD ratios best
    /// (level 6 stores within about 1–3 % of it at less than half the speed).
    DeflateFixed,
    /// zstd level 3 (btrfs's default level), each chunk a frame of its own.
    Zstd,
}

impl Codec {
    /// Name as used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Lz4 => "lz4",
            Codec::Deflate => "deflate",
            Codec::DeflateFixed => "deflate-fixed",
            Codec::Zstd => "zstd",
        }
    }
}

/// The compressed size from which zram stores a 4 KiB page whole: zsmalloc's
/// `huge_class_size`, the largest size class that packs more than one object
/// into a zspage, less its handle's bytes but one. zspages chain up to
/// `chain` pages: 8 by default from Linux 6.2 (`CONFIG_ZSMALLOC_CHAIN_SIZE`,
/// 4 to 16), 4 before. Measured on Linux 6.18: a page compressing to 3624
/// bytes is stored as 3624, one of 3625 as 4096 (so `chain` 8 gives 3625).
pub fn zram_whole_page_at(chain: u32) -> usize {
    const PAGE_BYTES: usize = 4096;
    const MIN_ALLOC: usize = 32;
    const CLASS_DELTA: usize = PAGE_BYTES >> 8;
    const HANDLE_BYTES: usize = 8;
    let chain = chain.clamp(1, 16) as usize;
    // Linux 6.2's calculate_zspage_chain_size: the fewest pages with the
    // least waste (older kernels' rule picks the same sizes for 4 pages).
    let pages_for = |size: usize| {
        if size.is_power_of_two() {
            return 1;
        }
        (1..=chain)
            .min_by_key(|&i| ((i * PAGE_BYTES) % size, i))
            .unwrap_or(1)
    };
    (0..=(PAGE_BYTES - MIN_ALLOC) / CLASS_DELTA)
        .rev()
        .map(|i| (MIN_ALLOC + i * CLASS_DELTA).min(PAGE_BYTES))
        .find(|&size| {
            let pages = pages_for(size);
            pages != 1 && pages * PAGE_BYTES / size != 1
        })
        .map_or(PAGE_BYTES, |size| size - (HANDLE_BYTES - 1))
}

/// Compresses pages one at a time, reusing its buffers.
pub struct PageCompressor {
    codec: Codec,
    out: Vec<u8>,
    deflate: Option<Box<CompressorOxide>>,
    zstd: Option<zstd::bulk::Compressor<'static>>,
    /// The previous page was stored raw (see [`PageCompressor::stored_len`]).
    last_raw: bool,
    /// Pages compressing to this many bytes or more are stored whole.
    whole_at: Option<usize>,
}

impl PageCompressor {
    /// A compressor for `codec`.
    pub fn new(codec: Codec) -> Self {
        let deflate = match codec {
            Codec::Lz4 | Codec::Zstd => None,
            Codec::Deflate => Some(Box::new(CompressorOxide::new(
                create_comp_flags_from_zip_params(6, -15, CompressionStrategy::Default as i32),
            ))),
            Codec::DeflateFixed => Some(Box::new(CompressorOxide::new(
                create_comp_flags_from_zip_params(1, -15, CompressionStrategy::Fixed as i32),
            ))),
        };
        PageCompressor {
            codec,
            out: vec![0; PAGE * 5],
            deflate,
            zstd: (codec == Codec::Zstd)
                .then(|| zstd::bulk::Compressor::new(3).expect("zstd level 3 is valid")),
            last_raw: false,
            whole_at: None,
        }
    }

    /// Counts a page that compresses to `bytes` or more as stored whole, as
    /// zram does with pages its allocator cannot pack ([`zram_whole_page_at`]).
    pub fn storing_whole_at(mut self, bytes: Option<usize>) -> Self {
        self.whole_at = bytes;
        self
    }

    /// The codec in use.
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// Bytes a drive would store for `page`: its compressed size, capped at its length.
    ///
    /// Fixed-Huffman deflate cannot shrink data without repeats (its literal
    /// codes are 8–9 bits), so after a page it stored raw, a page LZ4 cannot
    /// shrink either is counted raw without running deflate: runs of
    /// incompressible data cost LZ4's speed, not deflate's.
    pub fn stored_len(&mut self, page: &[u8]) -> usize {
        if page.is_empty() {
            return 0;
        }
        if self.codec == Codec::DeflateFixed && self.last_raw && self.lz4_len(page) >= page.len() {
            return page.len();
        }
        let mut n = self.compressed_len(page).min(page.len());
        if self.whole_at.is_some_and(|t| n >= t) {
            n = page.len();
        }
        self.last_raw = n == page.len();
        n
    }

    fn lz4_len(&mut self, page: &[u8]) -> usize {
        self.ensure_out(page.len());
        lz4::block::compress_to_buffer(
            page,
            Some(lz4::block::CompressionMode::DEFAULT),
            false,
            &mut self.out,
        )
        .unwrap_or(page.len())
    }

    fn ensure_out(&mut self, len: usize) {
        // Worst-case expansion of any codec here: len + len/255 + 64.
        let need = len + len / 255 + 64;
        if self.out.len() < need {
            self.out.resize(need, 0);
        }
    }

    fn compressed_len(&mut self, page: &[u8]) -> usize {
        self.ensure_out(page.len());
        match (&mut self.deflate, &mut self.zstd) {
            (Some(d), _) => {
                d.reset();
                let (status, _, out_pos) = compress(d, page, &mut self.out, TDEFLFlush::Finish);
                match status {
                    TDEFLStatus::Done => out_pos,
                    // Output buffer full or any other state: it did not shrink.
                    _ => page.len(),
                }
            }
            (None, Some(z)) => z
                .compress_to_buffer(page, &mut self.out)
                .unwrap_or(page.len()),
            (None, None) => self.lz4_len(page),
        }
    }
}

/// Running totals of a per-page compressibility measurement.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PageTally {
    /// Pages measured.
    pub pages: u64,
    /// Logical bytes measured (page sizes added up).
    pub logical_bytes: u64,
    /// Bytes a per-page compressing store would keep (each page capped at its size).
    pub stored_bytes: u64,
    /// Pages that are entirely zero bytes.
    pub zero_pages: u64,
    /// Pages filled with one repeated 8-byte word (zeros included): what zram
    /// counts as `same_pages` and stores no data for.
    pub same_filled_pages: u64,
}

impl PageTally {
    /// Logical / stored; `None` when nothing was stored.
    pub fn ratio(&self) -> Option<f64> {
        (self.stored_bytes > 0).then(|| self.logical_bytes as f64 / self.stored_bytes as f64)
    }

    /// Adds another tally to this one.
    pub fn merge(&mut self, other: &PageTally) {
        self.pages += other.pages;
        self.logical_bytes += other.logical_bytes;
        self.stored_bytes += other.stored_bytes;
        self.zero_pages += other.zero_pages;
        self.same_filled_pages += other.same_filled_pages;
    }
}

/// Whether `page` is one 8-byte word repeated (zram's same-page test).
pub fn is_same_filled(page: &[u8]) -> bool {
    if page.len() < 8 || !page.len().is_multiple_of(8) {
        return false;
    }
    let first = &page[..8];
    page.chunks_exact(8).all(|w| w == first)
}

impl PageCompressor {
    /// Measures `data` page by page (the last page may be short) and adds to `tally`.
    /// Same-filled pages count as stored size 0, as zram stores them.
    pub fn tally(&mut self, data: &[u8], tally: &mut PageTally) {
        self.tally_chunks(data, PAGE, tally);
    }

    /// Like [`PageCompressor::tally`] with chunks of `chunk` bytes (a drive
    /// whose compression unit is not 4 KiB).
    pub fn tally_chunks(&mut self, data: &[u8], chunk: usize, tally: &mut PageTally) {
        for page in data.chunks(chunk) {
            tally.pages += 1;
            tally.logical_bytes += page.len() as u64;
            if is_same_filled(page) {
                tally.same_filled_pages += 1;
                if page.iter().all(|&b| b == 0) {
                    tally.zero_pages += 1;
                }
                continue;
            }
            tally.stored_bytes += self.stored_len(page) as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(n: usize, mut s: u64) -> Vec<u8> {
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 24) as u8
            })
            .collect()
    }

    #[test]
    fn zram_stores_whole_the_pages_zsmalloc_cannot_pack() {
        // Measured here (Linux 6.18, chain 8) and zsmalloc's sizes before 6.2.
        assert_eq!(zram_whole_page_at(8), 3625);
        assert_eq!(zram_whole_page_at(4), 3257);
        assert_eq!(zram_whole_page_at(16), 3833);
        // Half random, half zeros: compresses to about 2 KiB, stored as such;
        // seven eighths random: above the threshold, stored whole.
        let mut half = noise(2048, 7);
        half.resize(PAGE, 0);
        let mut most = noise(3600, 7);
        most.resize(PAGE, 0);
        let mut c = PageCompressor::new(Codec::Lz4).storing_whole_at(Some(3625));
        let h = c.stored_len(&half);
        assert!(h > 2048 && h < 2200, "{h}");
        assert_eq!(c.stored_len(&most), PAGE);
        assert!(PageCompressor::new(Codec::Lz4).stored_len(&most) < PAGE);
    }

    #[test]
    fn incompressible_page_is_capped() {
        let page = noise(PAGE, 42);
        for codec in [Codec::Lz4, Codec::Deflate, Codec::DeflateFixed, Codec::Zstd] {
            assert_eq!(PageCompressor::new(codec).stored_len(&page), PAGE);
        }
    }

    #[test]
    fn text_compresses_and_fixed_is_not_better_than_dynamic() {
        let text: Vec<u8> = (0..2000u32)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .take(PAGE)
            .collect();
        let lz4 = PageCompressor::new(Codec::Lz4).stored_len(&text);
        let dynamic = PageCompressor::new(Codec::Deflate).stored_len(&text);
        let fixed = PageCompressor::new(Codec::DeflateFixed).stored_len(&text);
        let zstd = PageCompressor::new(Codec::Zstd).stored_len(&text);
        assert!(lz4 < PAGE && dynamic < PAGE && fixed < PAGE && zstd < PAGE);
        assert!(dynamic <= fixed, "dynamic {dynamic} fixed {fixed}");
    }

    #[test]
    fn tally_counts_same_filled_pages_as_free() {
        let mut data = vec![0u8; PAGE];
        data.extend(std::iter::repeat_n(0xABu8, PAGE));
        data.extend(noise(PAGE, 7));
        let mut t = PageTally::default();
        PageCompressor::new(Codec::Lz4).tally(&data, &mut t);
        assert_eq!(t.pages, 3);
        assert_eq!(t.zero_pages, 1);
        assert_eq!(t.same_filled_pages, 2);
        assert_eq!(t.stored_bytes, PAGE as u64);
        assert_eq!(t.ratio(), Some(3.0));
    }
}
