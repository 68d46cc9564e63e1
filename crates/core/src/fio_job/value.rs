//! fio's value grammar, as its parser reads values (parse.c `str_to_decimal`,
//! `get_mult_bytes`, `get_mult_time`; options.c's keywords and `${VAR}`).
//!
//! fio's rules are loose and we keep them, so a job file means here what it
//! means to fio:
//! - numbers: decimal, or hexadecimal when the text holds `0x`; what follows
//!   the digits is a unit only from its first letters (`4kilo` is 4 KiB, and an
//!   unknown letter multiplies by 1);
//! - sizes with `kb_base=1024` (the default): `k`/`kb` = 1024 but `kib` = 1000,
//!   the prefixes "opposite" to IEC for old scripts; `kb_base=1000` swaps them;
//! - times: `us`/`usec`, `ms`/`msec`, and exactly `s`, `m`, `h`, `d`; a bare
//!   number is seconds for options in seconds, otherwise microseconds;
//! - a value starting with `(` is arithmetic: `+ - * / % ^`, parentheses and
//!   units on the numbers, as fio's expression parser;
//! - `$pagesize`, `$mb_memory` and `$ncpus` are replaced and the value computed
//!   (fio hands it to `bc`: integer arithmetic).

use std::fmt;

/// A size as fio reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// Bytes.
    Bytes(u64),
    /// A percentage (`50%`): of the file or device, for `size` and `offset`.
    Percent(u64),
}

/// Why a value was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueError(pub String);

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The machine facts fio's keywords stand for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keywords {
    /// `$pagesize`: bytes.
    pub pagesize: u64,
    /// `$mb_memory`: MiB of memory.
    pub mb_memory: u64,
    /// `$ncpus`: online CPUs.
    pub ncpus: u64,
}

/// `strtoll` over the start of `s`: leading blanks, a sign, digits in `base`
/// (a `0x` prefix allowed in base 16). None when no digit was read.
fn strtoll(s: &str, base: u32) -> Option<(i128, &str)> {
    let t = s.trim_start();
    let (neg, mut rest) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if base == 16 && (rest.starts_with("0x") || rest.starts_with("0X")) {
        let after = &rest[2..];
        if after.chars().next().is_some_and(|c| c.is_ascii_hexdigit()) {
            rest = after;
        }
    }
    let end = rest.find(|c: char| !c.is_digit(base)).unwrap_or(rest.len());
    if end == 0 {
        return None;
    }
    let mut v: i128 = 0;
    for c in rest[..end].chars() {
        v = v
            .saturating_mul(base as i128)
            .saturating_add(c.to_digit(base).unwrap_or(0) as i128);
    }
    Some((if neg { -v } else { v }, &rest[end..]))
}

/// What follows the number: fio skips digits and signs (signs only before a
/// digit), and takes the rest as a unit only when it starts with a letter
/// (or `%` for sizes).
fn unit_text(s: &str, percent_ok: bool) -> Option<String> {
    let mut seen_digit = false;
    let mut idx = s.len();
    for (i, c) in s.char_indices() {
        let sign = c == '+' || c == '-';
        if !c.is_ascii_digit() && (!sign || seen_digit) {
            idx = i;
            break;
        }
        seen_digit |= c.is_ascii_digit();
    }
    let rest = &s[idx..];
    let first = rest.chars().next()?;
    (first.is_ascii_alphabetic() || (percent_ok && first == '%')).then(|| rest.to_ascii_lowercase())
}

/// The multiplier of a size unit (`__get_mult_bytes`), or None for `%`.
fn size_mult(unit: &str, kb_base: u64) -> Option<u64> {
    let u: String = unit
        .chars()
        .take_while(|c| !matches!(c, ':' | '-' | ',' | '/'))
        .collect();
    if u.starts_with('%') {
        return None;
    }
    // The IEC spellings take the other base.
    let other = if kb_base == 1000 { 1024 } else { 1000 };
    let (pow, mult) = if u.starts_with("pib") {
        (5, other)
    } else if u.starts_with("tib") {
        (4, other)
    } else if u.starts_with("gib") {
        (3, other)
    } else if u.starts_with("mib") {
        (2, other)
    } else if u.starts_with("kib") {
        (1, other)
    } else if u.starts_with('p') {
        (5, kb_base)
    } else if u.starts_with('t') {
        (4, kb_base)
    } else if u.starts_with('g') {
        (3, kb_base)
    } else if u.starts_with('m') {
        (2, kb_base)
    } else if u.starts_with('k') {
        (1, kb_base)
    } else {
        (0, kb_base)
    };
    Some(mult.pow(pow))
}

/// The multiplier of a time unit in microseconds (`get_mult_time`).
fn time_mult(unit: Option<&str>, is_seconds: bool) -> u64 {
    let Some(u) = unit else {
        return if is_seconds { 1_000_000 } else { 1 };
    };
    if u.starts_with("us") {
        1
    } else if u.starts_with("ms") {
        1_000
    } else {
        match u {
            "s" => 1_000_000,
            "m" => 60_000_000,
            "h" => 3_600_000_000,
            "d" => 86_400_000_000,
            // fio multiplies an unknown unit by one.
            _ => 1,
        }
    }
}

/// Reads a size (fio's `check_str_bytes`), with `kb_base` 1024 or 1000.
pub fn size(text: &str, kb_base: u64) -> Result<Size, ValueError> {
    let t = text.trim();
    if t.starts_with('(') {
        let v = Expr::new(t, Unit::Bytes(kb_base)).eval()?;
        return nonneg(v.round() as i128, text).map(Size::Bytes);
    }
    let base = if t.contains("0x") || t.contains("0X") {
        16
    } else {
        10
    };
    let (v, _) = strtoll(t, base).ok_or_else(|| not_a("size", text))?;
    let unit = if t.len() < 2 {
        None
    } else {
        unit_text(t, true)
    };
    match unit.as_deref().map(|u| size_mult(u, kb_base)) {
        Some(None) => nonneg(v, text).map(Size::Percent),
        Some(Some(m)) => nonneg(v, text)?
            .checked_mul(m)
            .map(Size::Bytes)
            .ok_or_else(|| ValueError(format!("'{text}' is too large"))),
        None => nonneg(v, text).map(Size::Bytes),
    }
}

/// Reads a size and refuses a percentage.
pub fn bytes(text: &str, kb_base: u64) -> Result<u64, ValueError> {
    match size(text, kb_base)? {
        Size::Bytes(b) => Ok(b),
        Size::Percent(_) => Err(ValueError(format!(
            "'{text}': a percentage is not allowed here"
        ))),
    }
}

/// Reads a time in microseconds (fio's `check_str_time`); a bare number is
/// seconds when `is_seconds`, else microseconds.
pub fn time_us(text: &str, is_seconds: bool) -> Result<u64, ValueError> {
    let t = text.trim();
    if t.starts_with('(') {
        let us = Expr::new(t, Unit::Time { is_seconds }).eval()?;
        let us = nonneg(us.round() as i128, text)?;
        // fio keeps whole seconds of an expression in an option in seconds.
        return Ok(if is_seconds {
            us / 1_000_000 * 1_000_000
        } else {
            us
        });
    }
    let base = if t.contains("0x") || t.contains("0X") {
        16
    } else {
        10
    };
    let (v, _) = strtoll(t, base).ok_or_else(|| not_a("time", text))?;
    let unit = unit_text(t, false);
    nonneg(v, text)?
        .checked_mul(time_mult(unit.as_deref(), is_seconds))
        .ok_or_else(|| ValueError(format!("'{text}' is too large")))
}

/// Reads an integer option (fio reads them as sizes: `iodepth=1k` is 1024).
pub fn int(text: &str) -> Result<u64, ValueError> {
    bytes(text, 1024)
}

/// Reads a boolean option: a missing value is 1, a number is true when not 0.
pub fn boolean(text: Option<&str>) -> Result<bool, ValueError> {
    match text {
        None => Ok(true),
        Some(t) => int(t).map(|v| v != 0),
    }
}

/// Splits a per-direction value (`bs=4k,8k`) into [read, write, trim], fio's
/// way: a missing trailing part takes the last value given, an empty part
/// keeps the default (None).
pub fn per_direction(text: &str) -> [Option<&str>; 3] {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let mut out = [None; 3];
    let mut last = None;
    for (i, slot) in out.iter_mut().enumerate() {
        match parts.get(i) {
            Some(&"") => *slot = None,
            Some(p) => {
                *slot = Some(*p);
                last = Some(*p);
            }
            // No trailing comma: the rest inherit the last value set.
            None => *slot = last,
        }
    }
    out
}

/// Replaces `${VAR}` by the variable's value (empty when unset), as fio does.
pub fn expand_env(text: &str, var: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        match after.find('}') {
            Some(j) if j > 0 => {
                out.push_str(&var(&after[..j]).unwrap_or_default());
                rest = &after[j + 1..];
            }
            _ => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Replaces fio's keywords in a value and computes it as `bc` would
/// (integers); values without keywords come back unchanged.
pub fn replace_keywords(value: &str, k: &Keywords) -> Result<String, ValueError> {
    if !value.contains('$') {
        return Ok(value.to_string());
    }
    let replaced = value
        .replace("$pagesize", &k.pagesize.to_string())
        .replace("$mb_memory", &k.mb_memory.to_string())
        .replace("$ncpus", &k.ncpus.to_string());
    if replaced == value {
        return Ok(replaced);
    }
    let v = Expr::new(&replaced, Unit::Integer).eval()?;
    Ok((v.trunc() as i128).to_string())
}

fn nonneg(v: i128, text: &str) -> Result<u64, ValueError> {
    u64::try_from(v).map_err(|_| ValueError(format!("'{text}' is negative or too large")))
}

fn not_a(what: &str, text: &str) -> ValueError {
    ValueError(format!("'{text}' is not a {what}"))
}

/// What the numbers of an expression mean.
#[derive(Clone, Copy)]
enum Unit {
    Bytes(u64),
    Time {
        is_seconds: bool,
    },
    /// `bc`: integer arithmetic, no units.
    Integer,
}

/// A small recursive-descent evaluator: sum := product (('+'|'-') product)*,
/// product := power (('*'|'/'|'%') power)*, power := unary ('^' power)?,
/// unary := '-' unary | atom, atom := number[unit] | '(' sum ')'.
struct Expr<'a> {
    text: &'a str,
    pos: usize,
    unit: Unit,
}

impl<'a> Expr<'a> {
    fn new(text: &'a str, unit: Unit) -> Self {
        Expr { text, pos: 0, unit }
    }

    fn err(&self) -> ValueError {
        ValueError(format!(
            "'{}' is not an arithmetic expression fio reads (+ - * / % ^, parentheses, numbers with units)",
            self.text
        ))
    }

    fn eval(mut self) -> Result<f64, ValueError> {
        let v = self.sum()?;
        self.blanks();
        if self.pos != self.text.len() {
            return Err(self.err());
        }
        Ok(v)
    }

    fn blanks(&mut self) {
        while self.text[self.pos..].starts_with([' ', '\t']) {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.blanks();
        self.text[self.pos..].chars().next()
    }

    fn sum(&mut self) -> Result<f64, ValueError> {
        let mut v = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.pos += 1;
            let r = self.product()?;
            v = if op == '+' { v + r } else { v - r };
        }
        Ok(v)
    }

    fn product(&mut self) -> Result<f64, ValueError> {
        let mut v = self.power()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek() {
            self.pos += 1;
            let r = self.power()?;
            if r == 0.0 && op != '*' {
                return Err(ValueError(format!("'{}': division by zero", self.text)));
            }
            v = match (op, self.unit) {
                ('*', _) => v * r,
                ('/', Unit::Integer) => (v / r).trunc(),
                ('/', _) => v / r,
                _ => v % r,
            };
        }
        Ok(v)
    }

    fn power(&mut self) -> Result<f64, ValueError> {
        let base = self.unary()?;
        if self.peek() == Some('^') {
            self.pos += 1;
            let exp = self.power()?;
            return Ok(base.powf(exp));
        }
        Ok(base)
    }

    fn unary(&mut self) -> Result<f64, ValueError> {
        if self.peek() == Some('-') {
            self.pos += 1;
            return Ok(-self.unary()?);
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<f64, ValueError> {
        if self.peek() == Some('(') {
            self.pos += 1;
            let v = self.sum()?;
            if self.peek() != Some(')') {
                return Err(self.err());
            }
            self.pos += 1;
            return Ok(v);
        }
        let rest = &self.text[self.pos..];
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_end == 0 {
            return Err(self.err());
        }
        let n: f64 = rest[..num_end].parse().map_err(|_| self.err())?;
        let unit_end = rest[num_end..]
            .find(|c: char| !c.is_ascii_alphabetic())
            .map_or(rest.len(), |i| num_end + i);
        let unit = rest[num_end..unit_end].to_ascii_lowercase();
        self.pos += unit_end;
        let mult = match self.unit {
            Unit::Integer if unit.is_empty() => 1.0,
            Unit::Integer => return Err(self.err()),
            Unit::Bytes(_) if unit.is_empty() => 1.0,
            Unit::Bytes(kb) => size_mult(&unit, kb).ok_or_else(|| self.err())? as f64,
            Unit::Time { is_seconds } => {
                time_mult((!unit.is_empty()).then_some(unit.as_str()), is_seconds) as f64
            }
        };
        Ok(n * mult)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> u64 {
        bytes(s, 1024).unwrap()
    }

    #[test]
    fn sizes_read_as_fio_reads_them() {
        assert_eq!(b("4096"), 4096);
        assert_eq!(b("4k"), 4096);
        assert_eq!(b("4K"), 4096);
        assert_eq!(b("4kb"), 4096);
        // kb_base=1024 swaps the IEC spellings, as fio's HOWTO says.
        assert_eq!(b("4KiB"), 4000);
        assert_eq!(bytes("4KiB", 1000).unwrap(), 4096);
        assert_eq!(bytes("4k", 1000).unwrap(), 4000);
        assert_eq!(b("1m"), 1 << 20);
        assert_eq!(b("2g"), 2 << 30);
        assert_eq!(b("1t"), 1 << 40);
        assert_eq!(b("1p"), 1 << 50);
        assert_eq!(b("0x10"), 16);
        assert_eq!(b("0x10k"), 16);
        // Only the first letters count; an unknown letter multiplies by one.
        assert_eq!(b("4kilo"), 4096);
        assert_eq!(b("4z"), 4);
        assert_eq!(b("4.5k"), 4);
        assert_eq!(size("50%", 1024).unwrap(), Size::Percent(50));
        assert!(bytes("50%", 1024).is_err());
        assert!(bytes("k", 1024).is_err());
        assert!(bytes("-4k", 1024).is_err());
        assert_eq!(b("(4k*2+512)"), 8704);
        assert_eq!(b("(2^10)"), 1024);
        assert_eq!(b("((1+1)*1m)"), 2 << 20);
        assert!(bytes("(4k*", 1024).is_err());
        assert_eq!(int("1k").unwrap(), 1024);
    }

    #[test]
    fn times_read_as_fio_reads_them() {
        assert_eq!(time_us("30", true).unwrap(), 30_000_000);
        assert_eq!(time_us("30", false).unwrap(), 30);
        assert_eq!(time_us("30s", false).unwrap(), 30_000_000);
        assert_eq!(time_us("2m", true).unwrap(), 120_000_000);
        assert_eq!(time_us("1h", true).unwrap(), 3_600_000_000);
        assert_eq!(time_us("1d", true).unwrap(), 86_400_000_000);
        assert_eq!(time_us("250ms", true).unwrap(), 250_000);
        assert_eq!(time_us("250msec", true).unwrap(), 250_000);
        assert_eq!(time_us("10us", true).unwrap(), 10);
        // fio's quirk: only exactly "s" is seconds, "sec" multiplies by one.
        assert_eq!(time_us("10sec", true).unwrap(), 10);
        assert_eq!(time_us("(1m+30s)", true).unwrap(), 90_000_000);
        assert!(time_us("soon", true).is_err());
    }

    #[test]
    fn per_direction_values_inherit_like_fio() {
        assert_eq!(per_direction("256k"), [Some("256k"); 3]);
        assert_eq!(
            per_direction("8k,32k"),
            [Some("8k"), Some("32k"), Some("32k")]
        );
        assert_eq!(per_direction("8k,32k,"), [Some("8k"), Some("32k"), None]);
        assert_eq!(per_direction(",8k"), [None, Some("8k"), Some("8k")]);
        assert_eq!(per_direction(",8k,"), [None, Some("8k"), None]);
    }

    #[test]
    fn variables_and_keywords_expand() {
        let var = |n: &str| (n == "DEV").then(|| "/dev/zram0".to_string());
        assert_eq!(expand_env("filename=${DEV}", &var), "filename=/dev/zram0");
        assert_eq!(expand_env("x${UNSET}y", &var), "xy");
        assert_eq!(expand_env("a${", &var), "a${");
        let k = Keywords {
            pagesize: 4096,
            mb_memory: 24000,
            ncpus: 2,
        };
        assert_eq!(replace_keywords("$mb_memory*2", &k).unwrap(), "48000");
        assert_eq!(replace_keywords("$ncpus", &k).unwrap(), "2");
        assert_eq!(replace_keywords("$pagesize/3", &k).unwrap(), "1365");
        assert_eq!(replace_keywords("4k", &k).unwrap(), "4k");
    }

    proptest::proptest! {
        #[test]
        fn every_suffix_scales_by_its_power(n in 0u64..100_000, pow in 0usize..5, upper: bool) {
            let letters = ["", "k", "m", "g", "t"];
            let s = format!("{n}{}", if upper { letters[pow].to_uppercase() } else { letters[pow].to_string() });
            proptest::prop_assert_eq!(bytes(&s, 1024).unwrap(), n * 1024u64.pow(pow as u32));
            let iec = format!("{n}{}ib", letters[pow]);
            if pow > 0 {
                proptest::prop_assert_eq!(bytes(&iec, 1024).unwrap(), n * 1000u64.pow(pow as u32));
                proptest::prop_assert_eq!(bytes(&iec, 1000).unwrap(), n * 1024u64.pow(pow as u32));
            }
        }

        #[test]
        fn times_scale_by_their_unit(n in 0u64..1_000_000, unit in 0usize..6) {
            let (suffix, mult) = [("us", 1u64), ("ms", 1_000), ("s", 1_000_000), ("m", 60_000_000),
                ("h", 3_600_000_000), ("", 1_000_000)][unit];
            proptest::prop_assert_eq!(time_us(&format!("{n}{suffix}"), true).unwrap(), n * mult);
        }

        #[test]
        fn arithmetic_agrees_with_plain_numbers(a in 0u64..10_000, b in 1u64..10_000) {
            proptest::prop_assert_eq!(bytes(&format!("({a}+{b})"), 1024).unwrap(), a + b);
            proptest::prop_assert_eq!(bytes(&format!("({a}k*{b})"), 1024).unwrap(), a * 1024 * b);
        }

        #[test]
        fn no_text_panics(s in "\\PC{0,12}") {
            let _ = size(&s, 1024);
            let _ = time_us(&s, true);
            let _ = per_direction(&s);
        }
    }
}
