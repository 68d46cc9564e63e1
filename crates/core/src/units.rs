//! Sizes and durations written the way fio users write them.
//!
//! Sizes: a number with an optional k/m/g/t/p suffix, optionally followed by
//! `i`, `b` or `ib` (`4k`, `4KiB`, `1M`, `2g`). Like fio's default
//! `kb_base=1024`, every suffix is a power of 1024. Durations: a number with an
//! optional `us`, `ms`, `s`, `m`, `h` suffix; a bare number means seconds, as in
//! fio's `runtime`.

use std::time::Duration;

/// Why a size or duration string was not accepted. The message names what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// Not a size.
    #[error(
        "'{0}' is not a size (expected a number with an optional k/m/g/t/p suffix, e.g. 4k, 256m)"
    )]
    BadSize(String),
    /// Not a duration.
    #[error("'{0}' is not a duration (expected e.g. 500ms, 30s, 5m, 1h; a bare number is seconds)")]
    BadDuration(String),
    /// Too large to represent.
    #[error("'{0}' is too large")]
    Overflow(String),
}

/// Parses a byte size such as `4k`, `128KiB`, `1g` or `4096`.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(split);
    if digits.is_empty() {
        return Err(UnitError::BadSize(text.to_string()));
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| UnitError::Overflow(text.to_string()))?;
    let lower = suffix.to_ascii_lowercase();
    let unit = lower.trim_end_matches(['b']).trim_end_matches('i');
    let shift = match unit {
        // "4" and "4b" are bytes; "4i" / "4ib" are not sizes.
        "" if lower.is_empty() || lower == "b" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        "p" => 50,
        _ => return Err(UnitError::BadSize(text.to_string())),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| UnitError::Overflow(text.to_string()))
}

/// Parses a duration such as `30s`, `5m`, `1h`, `250ms`, or `10` (seconds).
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    if num.is_empty() || num == "." {
        return Err(UnitError::BadDuration(text.to_string()));
    }
    let value: f64 = num
        .parse()
        .map_err(|_| UnitError::BadDuration(text.to_string()))?;
    let seconds_per_unit = match suffix.to_ascii_lowercase().as_str() {
        "us" => 1e-6,
        "ms" => 1e-3,
        "" | "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => return Err(UnitError::BadDuration(text.to_string())),
    };
    let secs = value * seconds_per_unit;
    if !secs.is_finite() || secs > 1e12 {
        return Err(UnitError::Overflow(text.to_string()));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Formats bytes with binary prefixes, e.g. `4.00KiB`, `1.50GiB`.
pub fn format_bytes(bytes: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0}{}", UNITS[i])
    } else {
        format!("{v:.2}{}", UNITS[i])
    }
}

/// Formats a count with k/M suffixes, as fio prints IOPS (`293k`, `1.05M`).
pub fn format_count(v: f64) -> String {
    if v >= 10e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 10e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Formats nanoseconds in the most readable unit (`812ns`, `12.3us`, `4.56ms`, `1.20s`).
pub fn format_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        format!("{:.2}us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.2}s", ns / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_like_fio() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("4K").unwrap(), 4096);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("4kb").unwrap(), 4096);
        assert_eq!(parse_size("256m").unwrap(), 256 << 20);
        assert_eq!(parse_size("1g").unwrap(), 1 << 30);
        assert_eq!(parse_size("2T").unwrap(), 2 << 40);
        assert_eq!(parse_size("512b").unwrap(), 512);
        for bad in ["", "k", "4x", "4kk", "-1", "1.5k", "4i"] {
            assert!(parse_size(bad).is_err(), "{bad} should be rejected");
        }
        assert!(matches!(
            parse_size("99999999999p"),
            Err(UnitError::Overflow(_))
        ));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        for bad in ["", "s", "3x", "1..2s", "-3s"] {
            assert!(parse_duration(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn formatting() {
        assert_eq!(format_bytes(4096.0), "4.00KiB");
        assert_eq!(format_bytes(100.0), "100B");
        assert_eq!(format_count(293_000.0), "293.0k");
        assert_eq!(format_count(2_470_000.0), "2.47M");
        assert_eq!(format_ns(812.0), "812ns");
        assert_eq!(format_ns(12_300.0), "12.30us");
    }
}
