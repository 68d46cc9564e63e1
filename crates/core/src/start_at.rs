//! `--start-at TIME`: one start instant for runs on several hosts. Parsing
//! (RFC 3339, or `HH:MM[:SS]` local time today) and RFC 3339 formatting, with
//! the clock and the local UTC offset passed in so the rules are testable.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Furthest ahead a start may be.
pub const MAX_AHEAD: Duration = Duration::from_secs(24 * 3600);

/// Parses a `--start-at` value: RFC 3339 (`2026-05-01T14:30:00Z`,
/// `2026-05-01T16:30:00.5+02:00`) or `HH:MM[:SS]` in local time today, whose
/// UTC offset at a given instant `local_offset_s` tells (seconds east of UTC).
/// Refused: unparsable text, an instant before `now`, or more than
/// [`MAX_AHEAD`] after it. The error is one line without the option's name.
pub fn parse_start_at(
    text: &str,
    now: SystemTime,
    local_offset_s: impl Fn(SystemTime) -> i64,
) -> Result<SystemTime, String> {
    let t = text.trim();
    let at = if t.contains('-') || t.contains('T') || t.contains('t') {
        parse_rfc3339(t)?
    } else {
        local_today(t, now, &local_offset_s)?
    };
    if at < now {
        return Err(format!(
            "'{text}' ({}) is in the past (now {}); give a later time",
            format_rfc3339_millis(at),
            format_rfc3339_millis(now)
        ));
    }
    if at.duration_since(now).unwrap_or_default() > MAX_AHEAD {
        return Err(format!(
            "'{text}' ({}) is more than 24 hours ahead (now {})",
            format_rfc3339_millis(at),
            format_rfc3339_millis(now)
        ));
    }
    Ok(at)
}

/// `HH:MM[:SS]` local time on the local date of `now`.
fn local_today(
    t: &str,
    now: SystemTime,
    local_offset_s: &impl Fn(SystemTime) -> i64,
) -> Result<SystemTime, String> {
    let bad = || format!("'{t}' is not RFC 3339 (2026-05-01T14:30:00Z) or HH:MM[:SS] local time");
    let parts: Vec<&str> = t.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return Err(bad());
    }
    let num = |s: &str, max: u32| -> Result<u32, String> {
        if s.len() != 2 || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        s.parse::<u32>().ok().filter(|v| *v <= max).ok_or_else(bad)
    };
    let (h, m) = (num(parts[0], 23)?, num(parts[1], 59)?);
    let s = if parts.len() == 3 {
        num(parts[2], 59)?
    } else {
        0
    };
    let secs_of_day = i64::from(h * 3600 + m * 60 + s);
    let now_s = unix_seconds(now);
    let offset = local_offset_s(now);
    let local_day = (now_s + offset).div_euclid(86_400);
    let mut at = local_day * 86_400 + secs_of_day - offset;
    // The offset at the target instant (a DST change between now and then).
    let offset_then = local_offset_s(from_unix_seconds(at));
    if offset_then != offset {
        at = local_day * 86_400 + secs_of_day - offset_then;
    }
    Ok(from_unix_seconds(at))
}

fn unix_seconds(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs_f64().ceil() as i64),
    }
}

fn from_unix_seconds(s: i64) -> SystemTime {
    if s >= 0 {
        UNIX_EPOCH + Duration::from_secs(s as u64)
    } else {
        UNIX_EPOCH - Duration::from_secs(s.unsigned_abs())
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number (inverse of [`days_from_civil`]).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Parses RFC 3339: `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` (`T` may be a
/// space; `Z` and `T` in either case).
pub fn parse_rfc3339(text: &str) -> Result<SystemTime, String> {
    let bad = || {
        format!(
            "'{text}' is not RFC 3339 (e.g. 2026-05-01T14:30:00Z or 2026-05-01T16:30:00+02:00) \
             or HH:MM[:SS] local time"
        )
    };
    let b = text.as_bytes();
    if b.len() < 20 {
        return Err(bad());
    }
    let digits = |r: std::ops::Range<usize>| -> Result<u32, String> {
        let s = text.get(r).ok_or_else(bad)?;
        if !s.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        s.parse().map_err(|_| bad())
    };
    if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return Err(bad());
    }
    if b[13] != b':' || b[16] != b':' {
        return Err(bad());
    }
    let (y, mo, d) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (h, mi, s) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&mo) || d == 0 || d > month_days[mo as usize - 1] || h > 23 || mi > 59 {
        return Err(bad());
    }
    // Leap second 60 is read as 59.
    if s > 60 {
        return Err(bad());
    }
    let mut i = 19;
    let mut nanos: u64 = 0;
    if b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return Err(bad());
        }
        let frac = &text[start..i.min(start + 9)];
        nanos = frac.parse::<u64>().map_err(|_| bad())? * 10u64.pow(9 - frac.len() as u32);
    }
    let offset: i64 = match &text[i..] {
        "Z" | "z" => 0,
        tz if tz.len() == 6
            && matches!(tz.as_bytes()[0], b'+' | b'-')
            && tz.as_bytes()[3] == b':' =>
        {
            let oh = digits(i + 1..i + 3)?;
            let om = digits(i + 4..i + 6)?;
            if oh > 23 || om > 59 {
                return Err(bad());
            }
            let o = i64::from(oh * 3600 + om * 60);
            if tz.starts_with('-') { -o } else { o }
        }
        _ => return Err(bad()),
    };
    let secs = days_from_civil(i64::from(y), mo, d) * 86_400
        + i64::from(h * 3600 + mi * 60 + s.min(59))
        - offset;
    Ok(from_unix_seconds(secs) + Duration::from_nanos(nanos))
}

/// `t` as RFC 3339 UTC with milliseconds (`2026-05-01T14:30:00.000Z`).
pub fn format_rfc3339_millis(t: SystemTime) -> String {
    let (secs, millis) = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_millis()),
        Err(_) => (unix_seconds(t), 0),
    };
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> SystemTime {
        parse_rfc3339(s).unwrap()
    }

    #[test]
    fn rfc3339_both_ways() {
        let t = at("2026-11-23T15:30:00Z");
        assert_eq!(unix_seconds(t), 1_795_447_800);
        assert_eq!(format_rfc3339_millis(t), "2026-11-23T15:30:00.000Z");
        assert_eq!(
            at("2026-11-23T17:30:00.250+02:00"),
            t + Duration::from_millis(250)
        );
        assert_eq!(at("2026-11-23 10:30:00-05:00"), t);
        assert_eq!(
            format_rfc3339_millis(at("2000-02-29T23:59:59.999Z")),
            "2000-02-29T23:59:59.999Z"
        );
        for bad in [
            "2026-11-23",
            "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-11-23T15:30:00",
            "2026-11-23T15:30:00+2",
        ] {
            assert!(parse_rfc3339(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn start_at_rules() {
        let now = at("2026-11-23T15:30:00Z");
        let utc = |_| 0;
        let cet = |_| 3600;
        assert_eq!(
            parse_start_at("15:31", now, utc).unwrap(),
            at("2026-11-23T15:31:00Z")
        );
        assert_eq!(
            parse_start_at("16:31:05", now, cet).unwrap(),
            at("2026-11-23T15:31:05Z")
        );
        assert_eq!(
            parse_start_at("2026-11-24T15:30:00Z", now, utc).unwrap(),
            now + MAX_AHEAD
        );
        let e = parse_start_at("15:29:59", now, utc).unwrap_err();
        assert!(e.contains("in the past"), "{e}");
        let e = parse_start_at("2026-11-24T15:30:01Z", now, utc).unwrap_err();
        assert!(e.contains("more than 24 hours ahead"), "{e}");
        for bad in ["25:00", "noon", "1:2:3", "12:00:00:00", ""] {
            assert!(parse_start_at(bad, now, utc).is_err(), "{bad}");
        }
    }
}
