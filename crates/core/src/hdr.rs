//! Lossless latency histograms in results: HdrHistogram's standard "V2
//! compressed" encoding, base64 text — exactly what HdrHistogram's Java and C
//! `encodeIntoCompressedByteBuffer` + base64 produce and what their log
//! readers (`HistogramLogProcessor`, `hdr_log_read`, HdrHistogram_py, …)
//! decode.
//!
//! Layout (big-endian): cookie `0x1c849314` (so every encoding starts with
//! `HISTF` in base64), length of the zlib stream, then a zlib (deflate) stream
//! of the V2 body — cookie `0x1c849313`, payload length, normalizing index
//! offset, significant digits, lowest discernible value, highest trackable
//! value, integer-to-double ratio, then the counts as ZigZag LEB128 varints
//! with runs of zeros as negative counts. Encoding and decoding are those of
//! the `hdrhistogram` crate (`V2DeflateSerializer`, `Deserializer`).
//!
//! Values are whatever the histogram recorded: csdchar's latencies are
//! nanoseconds.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

/// First four bytes of a V2 compressed encoding (HdrHistogram's
/// `V2CompressedEncodingCookieBase | 0x10`).
pub const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;

/// Base64 text every V2 compressed encoding starts with (the cookie's first
/// 30 bits).
pub const BASE64_PREFIX: &str = "HISTF";

/// A histogram text that is not a V2 compressed HdrHistogram in base64.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an HdrHistogram V2 compressed encoding in base64: {0}")]
pub struct HdrError(pub String);

/// `h` in V2 compressed (deflate) encoding, base64 (standard alphabet, padded).
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("serializing into memory cannot fail");
    STANDARD.encode(bytes)
}

/// The histogram of [`encode`]'s text (or any HdrHistogram tool's V2 or V2
/// compressed encoding in base64).
pub fn decode(text: &str) -> Result<Histogram<u64>, HdrError> {
    let bytes = STANDARD
        .decode(text.trim())
        .map_err(|e| HdrError(format!("base64: {e}")))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| HdrError(format!("{e:?}")))
}

/// The sum of the histograms in `texts`: every count added bucket by bucket,
/// at the precision of the first. None when `texts` is empty.
pub fn decode_sum<'a>(
    texts: impl IntoIterator<Item = &'a str>,
) -> Result<Option<Histogram<u64>>, HdrError> {
    let mut sum: Option<Histogram<u64>> = None;
    for t in texts {
        let h = decode(t)?;
        match sum.as_mut() {
            None => sum = Some(h),
            Some(s) => s
                .add(&h)
                .map_err(|e| HdrError(format!("cannot add histograms: {e:?}")))?,
        }
    }
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hist(digits: u8, values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, crate::stats::MAX_TRACKED_NS, digits).unwrap();
        for &v in values {
            h.saturating_record(v);
        }
        h
    }

    #[test]
    fn cookie_and_prefix_are_hdrhistogram_s() {
        let text = encode(&hist(3, &[1, 1000, 123_456_789]));
        assert!(text.starts_with(BASE64_PREFIX), "{text}");
        let bytes = STANDARD.decode(&text).unwrap();
        assert_eq!(
            u32::from_be_bytes(bytes[..4].try_into().unwrap()),
            V2_COMPRESSED_COOKIE
        );
        // The length field covers the zlib stream that follows (78 = zlib CMF).
        let len = u32::from_be_bytes(bytes[4..8].try_into().unwrap()) as usize;
        assert_eq!(len, bytes.len() - 8);
        assert_eq!(bytes[8], 0x78);
    }

    #[test]
    fn decodes_an_encoding_made_by_hdrhistogram_java() {
        // The first interval of jHiccup's log in HdrHistogram_rust's test data
        // (tests/data/tagged-Log.logV2.hlog): nanoseconds, Interval_Max 2.769 ms.
        let java = "HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgdnNYMcCBvsPEBEJISEuATEZMQ4uASkhIR4nrxg9v2lMaxhvMekILGZkKmcCAEf2CsI=";
        let h = decode(java).expect("a Java encoding decodes");
        assert!(!h.is_empty());
        let max_ms = h.max() as f64 / 1e6;
        assert!((max_ms - 2.769).abs() < 0.01, "{max_ms}");
        // And it survives our round trip.
        assert_eq!(decode(&encode(&h)).unwrap(), h);
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(decode("not base64!").is_err());
        assert!(decode("aGVsbG8=").is_err());
        assert!(decode_sum(["HISTFAAA"]).is_err());
        assert_eq!(decode_sum([]).unwrap(), None);
    }

    proptest! {
        #[test]
        fn round_trip_keeps_every_count(
            digits in 2u8..=3,
            values in proptest::collection::vec(
                prop_oneof![1u64..10_000, 10_000u64..100_000_000, 1u64..u64::MAX / 2], 0..300),
        ) {
            let h = hist(digits, &values);
            let back = decode(&encode(&h)).unwrap();
            prop_assert_eq!(back.len(), h.len());
            prop_assert_eq!(back.sigfig(), h.sigfig());
            prop_assert_eq!(back.max(), h.max());
            prop_assert_eq!(back.min(), h.min());
            for q in [0.0, 0.01, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
                prop_assert_eq!(back.value_at_quantile(q), h.value_at_quantile(q));
            }
            let counts = |h: &Histogram<u64>| {
                h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect::<Vec<_>>()
            };
            prop_assert_eq!(counts(&back), counts(&h));
            prop_assert_eq!(back, h);
        }

        #[test]
        fn sum_of_encodings_is_the_histogram_of_all_values(
            a in proptest::collection::vec(1u64..1_000_000_000, 0..200),
            b in proptest::collection::vec(1u64..1_000_000_000, 0..200),
        ) {
            let both: Vec<u64> = a.iter().chain(&b).copied().collect();
            let sum = decode_sum([encode(&hist(3, &a)).as_str(), encode(&hist(3, &b)).as_str()])
                .unwrap()
                .unwrap();
            prop_assert_eq!(sum, hist(3, &both));
        }
    }
}
