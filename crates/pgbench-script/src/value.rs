//! pgbench's values (`PgBenchValue`): NULL, int64, double and boolean, their text forms
//! (`%lld`, `%.15g`, `true`/`false`, `NULL`) and the lazy typing of strings that come
//! from `-D`, `\gset` and `\aset` (`makeVariableValue`).

use std::fmt::Write as _;

/// A value of the expression language.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// A 64-bit integer.
    Int(i64),
    /// A double.
    Double(f64),
    /// A boolean.
    Bool(bool),
}

impl Value {
    /// pgbench's name of the type, as in its error messages (`valueTypeName`).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Int(_) => "int",
            Value::Double(_) => "double",
            Value::Bool(_) => "boolean",
        }
    }

    /// Truth for `\if`, `\elif` and `CASE WHEN` (`valueTruth`): NULL and zero are false.
    pub fn truth(&self) -> bool {
        match *self {
            Value::Null => false,
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            Value::Double(d) => d != 0.0,
        }
    }

    /// Appends the value's text as pgbench substitutes it into SQL and shell commands
    /// (`getVariable`).
    pub fn write_text(&self, out: &mut Vec<u8>) {
        match *self {
            Value::Null => out.extend_from_slice(b"NULL"),
            Value::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
            Value::Int(i) => write_int(out, i),
            Value::Double(d) => write_g(out, d, 15),
        }
    }

    /// The value's text ([`Value::write_text`]) as a string.
    pub fn to_text(&self) -> String {
        let mut v = Vec::new();
        self.write_text(&mut v);
        String::from_utf8(v).expect("ASCII")
    }

    /// What pgbench's `debug()` prints after its prefix: `int 5`, `double 0.5`,
    /// `boolean true`, `null`.
    pub fn debug_text(&self) -> String {
        match *self {
            Value::Null => "null".into(),
            Value::Bool(b) => format!("boolean {b}"),
            Value::Int(i) => format!("int {i}"),
            Value::Double(d) => format!("double {}", format_g15(d)),
        }
    }
}

/// Appends `i` in decimal without allocating.
pub fn write_int(out: &mut Vec<u8>, i: i64) {
    let mut buf = [0u8; 20];
    let mut n = i.unsigned_abs();
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if i < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&buf[at..]);
}

/// C's `printf("%.15g", d)` (pgbench's `"%.*g", DBL_DIG`): 15 significant digits,
/// trailing zeros removed, exponent form below 1e-4 and from 1e15.
pub fn format_g15(d: f64) -> String {
    format_g(d, 15)
}

/// C's `%.{precision}g` as glibc prints it (`inf`, `-inf`, `nan`, `-nan`).
pub fn format_g(d: f64, precision: usize) -> String {
    let mut v = Vec::new();
    write_g(&mut v, d, precision);
    String::from_utf8(v).expect("ASCII")
}

/// A small buffer on the stack for one number's digits.
struct StackBuf {
    b: [u8; 64],
    n: usize,
}

impl std::fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.n + s.len();
        if end > self.b.len() {
            return Err(std::fmt::Error);
        }
        self.b[self.n..end].copy_from_slice(s.as_bytes());
        self.n = end;
        Ok(())
    }
}

/// Appends C's `%.{precision}g` of `d` to `out` without allocating (beyond `out`'s growth).
pub fn write_g(out: &mut Vec<u8>, d: f64, precision: usize) {
    if d.is_nan() {
        out.extend_from_slice(if d.is_sign_negative() {
            b"-nan"
        } else {
            b"nan"
        });
        return;
    }
    if d.is_infinite() {
        out.extend_from_slice(if d < 0.0 { b"-inf" } else { b"inf" });
        return;
    }
    let p = precision.clamp(1, 17);
    // The exponent after rounding to p significant digits decides the style.
    let mut e = StackBuf { b: [0; 64], n: 0 };
    write!(e, "{:.*e}", p - 1, d).expect("fits");
    let text = &e.b[..e.n];
    let at = text.iter().position(|&c| c == b'e').expect("exponent form");
    let x: i32 = std::str::from_utf8(&text[at + 1..])
        .expect("ASCII")
        .parse()
        .expect("exponent");
    if (x as i64) < p as i64 && x >= -4 {
        let decimals = (p as i32 - 1 - x) as usize;
        let mut f = StackBuf { b: [0; 64], n: 0 };
        write!(f, "{:.*}", decimals, d).expect("fits");
        out.extend_from_slice(strip_zeros(&f.b[..f.n]));
    } else {
        out.extend_from_slice(strip_zeros(&text[..at]));
        out.push(b'e');
        out.push(if x < 0 { b'-' } else { b'+' });
        let a = x.unsigned_abs();
        if a < 10 {
            out.push(b'0');
        }
        write_int(out, a as i64);
    }
}

fn strip_zeros(s: &[u8]) -> &[u8] {
    let mut s = s;
    if s.contains(&b'.') {
        while let [rest @ .., b'0'] = s {
            s = rest;
        }
        if let [rest @ .., b'.'] = s {
            s = rest;
        }
    }
    s
}

/// C's `printf("%f", d)`, as pgbench's error messages print doubles.
pub fn format_f(d: f64) -> String {
    if d.is_nan() {
        return if d.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if d.is_infinite() {
        return if d < 0.0 { "-inf" } else { "inf" }.into();
    }
    format!("{d:.6}")
}

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Why a string is not a value (`makeVariableValue`'s failures).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextValueError {
    /// The empty string: pgbench fails without a message of its own.
    Empty,
    /// An integer out of range (`value "…" is out of range for type bigint`).
    OutOfRange,
    /// Neither a keyword, an integer nor a double (`malformed variable "v" value: "…"`).
    Malformed,
}

/// Types a string the way pgbench does on first use (`makeVariableValue`): `null` (any
/// case); prefixes of `true`/`yes` and `on`; prefixes of `false`/`no`, `off` and `of`;
/// `[ws][+-]digits` as int64; otherwise C's `strtod` over the whole string.
pub fn parse_text_value(s: &[u8]) -> Result<Value, TextValueError> {
    if s.is_empty() {
        return Err(TextValueError::Empty);
    }
    let prefix_of = |word: &[u8]| s.len() <= word.len() && word[..s.len()].eq_ignore_ascii_case(s);
    if s.eq_ignore_ascii_case(b"null") {
        Ok(Value::Null)
    } else if prefix_of(b"true") || prefix_of(b"yes") || s.eq_ignore_ascii_case(b"on") {
        Ok(Value::Bool(true))
    } else if prefix_of(b"false")
        || prefix_of(b"no")
        || s.eq_ignore_ascii_case(b"off")
        || s.eq_ignore_ascii_case(b"of")
    {
        Ok(Value::Bool(false))
    } else if is_an_int(s) {
        strtoint64(s)
            .map(Value::Int)
            .ok_or(TextValueError::OutOfRange)
    } else {
        match strtod_whole(s) {
            Some(Ok(d)) => Ok(Value::Double(d)),
            _ => Err(TextValueError::Malformed),
        }
    }
}

/// pgbench's `is_an_int`: `^\s*[-+]?[0-9]+$` (an empty digit run passes too, as in C).
fn is_an_int(s: &[u8]) -> bool {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        i += 1;
    }
    if i < s.len() && !s[i].is_ascii_digit() {
        return false;
    }
    while i < s.len() && s[i].is_ascii_digit() {
        i += 1;
    }
    i == s.len()
}

/// pgbench's `strtoint64`: optional spaces, sign, at least one digit, trailing spaces;
/// None on bad syntax or overflow.
pub fn strtoint64(s: &[u8]) -> Option<i64> {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && s[i] == b'-' {
        neg = true;
        i += 1;
    } else if i < s.len() && s[i] == b'+' {
        i += 1;
    }
    if i >= s.len() || !s[i].is_ascii_digit() {
        return None;
    }
    // Accumulated as a negative number, as pgbench does, so INT64_MIN fits.
    let mut tmp: i64 = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        tmp = tmp.checked_mul(10)?.checked_sub((s[i] - b'0') as i64)?;
        i += 1;
    }
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    if i != s.len() {
        return None;
    }
    if neg { Some(tmp) } else { tmp.checked_neg() }
}

/// C's `strtod` required to consume the whole string (pgbench's `strtodouble`): None on
/// bad syntax, `Some(Err(()))` when `strtod` would set `ERANGE` (overflow, or underflow
/// to a subnormal or zero).
pub fn strtod_whole(s: &[u8]) -> Option<Result<f64, ()>> {
    let (v, used, range_error) = strtod(s)?;
    if used != s.len() {
        return None;
    }
    Some(if range_error { Err(()) } else { Ok(v) })
}

/// C's `strtod` (glibc, C locale): leading spaces, sign, decimal or hexadecimal
/// mantissa with exponent, `inf`/`infinity`/`nan`/`nan(…)`. Returns the value, the
/// bytes consumed and whether `ERANGE` would be set; None when nothing converts.
pub fn strtod(s: &[u8]) -> Option<(f64, usize, bool)> {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let rest = &s[i..];
    let sign = if neg { -1.0 } else { 1.0 };
    let starts = |w: &[u8]| rest.len() >= w.len() && rest[..w.len()].eq_ignore_ascii_case(w);
    if starts(b"infinity") {
        return Some((sign * f64::INFINITY, i + 8, false));
    }
    if starts(b"inf") {
        return Some((sign * f64::INFINITY, i + 3, false));
    }
    if starts(b"nan") {
        let mut end = i + 3;
        if end < s.len() && s[end] == b'(' {
            let mut j = end + 1;
            while j < s.len() && (s[j].is_ascii_alphanumeric() || s[j] == b'_') {
                j += 1;
            }
            if j < s.len() && s[j] == b')' {
                end = j + 1;
            }
        }
        let nan = if neg { -f64::NAN } else { f64::NAN };
        return Some((nan, end, false));
    }
    if rest.len() >= 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
        if let Some((v, used, range)) = hex_float(&rest[2..]) {
            return Some((sign * v, i + 2 + used, range));
        }
        // "0x" without hex digits converts the "0".
        return Some((sign * 0.0, i + 1, false));
    }
    // Decimal: digits [. digits] [e [sign] digits]
    let mut j = 0;
    let mut digits = 0;
    let mut nonzero = false;
    while j < rest.len() && rest[j].is_ascii_digit() {
        nonzero |= rest[j] != b'0';
        j += 1;
        digits += 1;
    }
    if j < rest.len() && rest[j] == b'.' {
        j += 1;
        while j < rest.len() && rest[j].is_ascii_digit() {
            nonzero |= rest[j] != b'0';
            j += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    let mantissa_end = j;
    if j < rest.len() && (rest[j] | 0x20) == b'e' {
        let mut k = j + 1;
        if k < rest.len() && (rest[k] == b'+' || rest[k] == b'-') {
            k += 1;
        }
        if k < rest.len() && rest[k].is_ascii_digit() {
            while k < rest.len() && rest[k].is_ascii_digit() {
                k += 1;
            }
            j = k;
        }
    }
    let _ = mantissa_end;
    let text = std::str::from_utf8(&rest[..j]).ok()?;
    // Rust's parser is correctly rounded like glibc's, but wants no lone "." forms
    // it does not know; "1." and ".5" it accepts.
    let v: f64 = text.parse().ok()?;
    let range = v.is_infinite() || (nonzero && (v == 0.0 || v.abs() < f64::MIN_POSITIVE));
    Some((sign * v, i + j, range))
}

/// A hexadecimal float after "0x": hex digits [. hex digits] [p [sign] digits].
fn hex_float(s: &[u8]) -> Option<(f64, usize, bool)> {
    let mut j = 0;
    let mut mant: u64 = 0;
    let mut exp: i64 = 0;
    let mut digits = 0;
    let mut sticky = false;
    let hexval = |b: u8| (b as char).to_digit(16);
    let mut take = |d: u32, frac: bool, mant: &mut u64, exp: &mut i64| {
        if *mant >> 60 == 0 {
            *mant = (*mant << 4) | d as u64;
            if frac {
                *exp -= 4;
            }
        } else {
            sticky |= d != 0;
            if !frac {
                *exp += 4;
            }
        }
    };
    while j < s.len() {
        let Some(d) = hexval(s[j]) else { break };
        take(d, false, &mut mant, &mut exp);
        j += 1;
        digits += 1;
    }
    if j < s.len() && s[j] == b'.' {
        let mut k = j + 1;
        let mut fd = 0;
        while k < s.len() {
            let Some(d) = hexval(s[k]) else { break };
            take(d, true, &mut mant, &mut exp);
            k += 1;
            fd += 1;
        }
        if digits + fd > 0 {
            j = k;
            digits += fd;
        }
    }
    if digits == 0 {
        return None;
    }
    if j < s.len() && (s[j] | 0x20) == b'p' {
        let mut k = j + 1;
        let mut neg = false;
        if k < s.len() && (s[k] == b'+' || s[k] == b'-') {
            neg = s[k] == b'-';
            k += 1;
        }
        if k < s.len() && s[k].is_ascii_digit() {
            let mut e: i64 = 0;
            while k < s.len() && s[k].is_ascii_digit() {
                e = (e * 10 + (s[k] - b'0') as i64).min(1 << 20);
                k += 1;
            }
            exp += if neg { -e } else { e };
            j = k;
        }
    }
    if sticky {
        mant |= 1;
    }
    let v = ldexp(mant as f64, exp);
    // glibc sets ERANGE on overflow, and on underflow only when the result is both tiny
    // before rounding (below 2^-1022, as x86 detects it) and inexact: an exactly
    // representable subnormal such as 0x.ap-1022 converts without an error.
    let tiny = mant != 0 && (63 - mant.leading_zeros() as i64) + exp < -1022;
    let inexact =
        sticky || (mant as f64) as u64 != mant || v == 0.0 || ldexp(v, -exp) != mant as f64;
    let range = v.is_infinite() || (tiny && inexact);
    Some((v, j, range))
}

/// `v * 2^e` without overflowing or underflowing on the way.
fn ldexp(mut v: f64, mut e: i64) -> f64 {
    if v == 0.0 {
        return v;
    }
    while e > 1000 && v.is_finite() {
        v *= 2f64.powi(1000);
        e -= 1000;
    }
    while e < -1000 && v != 0.0 {
        v *= 2f64.powi(-1000);
        e += 1000;
    }
    v * 2f64.powi(e.clamp(-2000, 2000) as i32)
}

/// C's `atoi` as glibc has it: `(int) strtol(s, NULL, 10)` (leading spaces, sign,
/// digits; saturating at the long range, then truncated to 32 bits).
pub fn atoi(s: &[u8]) -> i32 {
    strtol(s).0 as i32
}

/// C's `strtol(s, &end, 10)` on a 64-bit long: the value (saturated) and the bytes
/// consumed (0 when no digits).
pub fn strtol(s: &[u8]) -> (i64, usize) {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let start = i;
    let mut acc: i128 = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        acc = (acc * 10 + (s[i] - b'0') as i128).min(i64::MAX as i128 + 1);
        i += 1;
    }
    if i == start {
        return (0, 0);
    }
    let v = if neg { -acc } else { acc };
    (v.clamp(i64::MIN as i128, i64::MAX as i128) as i64, i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_underflow_is_a_range_error_only_when_inexact() {
        // (input, value bits as glibc gives them, ERANGE as glibc sets it)
        let cases: &[(&str, f64, bool)] = &[
            ("0X.aP-1022", f64::from_bits(0x000a_0000_0000_0000), false),
            ("0x1p-1074", f64::from_bits(1), false),
            ("0x1.8p-1074", f64::from_bits(2), true),
            ("0x1p-1075", 0.0, true),
            ("0x1.fffffffffffffp-1023", f64::MIN_POSITIVE, true),
            ("0x1p-1022", f64::MIN_POSITIVE, false),
            ("0x3p-1076", f64::from_bits(1), true),
        ];
        for &(s, v, range) in cases {
            let (got, used, got_range) = strtod(s.as_bytes()).unwrap();
            assert_eq!(
                (got.to_bits(), used, got_range),
                (v.to_bits(), s.len(), range),
                "{s}"
            );
        }
    }

    #[test]
    fn g15_matches_c() {
        let cases: &[(f64, &str)] = &[
            (1.0, "1"),
            (1e20, "1e+20"),
            (2.0 / 3.0, "0.666666666666667"),
            (-0.125, "-0.125"),
            (-0.00032, "-0.00032"),
            (8.507059173023462e37, "8.50705917302346e+37"),
            (1e30, "1e+30"),
            (1024.0, "1024"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123456789012345.0, "123456789012345"),
            (1234567890123456.0, "1.23456789012346e+15"),
            (999999999999999.9, "1e+15"),
            (0.0, "0"),
            (-0.0, "-0"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (-54.21e-2, "-0.5421"),
            (36.9999996, "36.9999996"),
            (5e-324, "4.94065645841247e-324"),
        ];
        for (d, want) in cases {
            assert_eq!(format_g15(*d), *want, "{d:e}");
        }
    }

    #[test]
    fn text_values_type_as_pgbench() {
        use Value::*;
        let ok = |s: &str| parse_text_value(s.as_bytes()).unwrap();
        assert_eq!(ok("null"), Null);
        assert_eq!(ok("NuLL"), Null);
        assert_eq!(ok("t"), Bool(true));
        assert_eq!(ok("ye"), Bool(true));
        assert_eq!(ok("ON"), Bool(true));
        assert_eq!(ok("of"), Bool(false));
        assert_eq!(ok("n"), Bool(false));
        assert_eq!(ok("fals"), Bool(false));
        assert_eq!(ok("+3"), Int(3));
        assert_eq!(ok(" -10"), Int(-10));
        assert_eq!(ok("-9223372036854775808"), Int(i64::MIN));
        assert_eq!(ok("-10.1"), Double(-10.1));
        assert_eq!(ok("0x10"), Double(16.0));
        assert_eq!(ok("1e3"), Double(1000.0));
        assert_eq!(ok("1."), Double(1.0));
        assert_eq!(ok(" .5"), Double(0.5));
        assert_eq!(ok("inf"), Double(f64::INFINITY));
        let err = |s: &str| parse_text_value(s.as_bytes()).unwrap_err();
        assert_eq!(err(""), TextValueError::Empty);
        assert_eq!(err("9223372036854775808"), TextValueError::OutOfRange);
        assert_eq!(err("bla"), TextValueError::Malformed);
        assert_eq!(err("trueXXX"), TextValueError::Malformed);
        assert_eq!(err("o"), TextValueError::Malformed);
        assert_eq!(err("1e999"), TextValueError::Malformed);
        assert_eq!(err("1 x"), TextValueError::Malformed);
    }

    #[test]
    fn atoi_truncates_like_glibc() {
        assert_eq!(atoi(b"4294967297"), 1);
        assert_eq!(atoi(b" 12abc"), 12);
        assert_eq!(atoi(b"1.0"), 1);
        assert_eq!(atoi(b"x"), 0);
        assert_eq!(atoi(b"-0"), 0);
        assert_eq!(atoi(b"99999999999999999999"), -1);
    }

    #[test]
    fn write_int_extremes() {
        for i in [0, 1, -1, 42, i64::MIN, i64::MAX] {
            let mut v = Vec::new();
            write_int(&mut v, i);
            assert_eq!(String::from_utf8(v).unwrap(), i.to_string());
        }
    }
}
