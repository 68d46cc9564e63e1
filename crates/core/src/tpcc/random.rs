//! TPC-C's random values: uniform and NURand with the C constants of clause 2.1.6
//! (and clause 2.1.6.1's rule for the run's C), last names from syllables, and the
//! strings, numbers and decimals of clause 4.3.2 written as COPY text.

use rand_core::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

// ---------------------------------------------------------------------------
// Random numbers (clause 2.1.6, 4.3.2)

/// Uniform integer in [lo, hi].
pub fn uniform(rng: &mut Xoshiro256PlusPlus, lo: u32, hi: u32) -> u32 {
    let span = u64::from(hi - lo) + 1;
    lo + ((u128::from(rng.next_u64()) * u128::from(span)) >> 64) as u32
}

/// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
pub fn nurand(rng: &mut Xoshiro256PlusPlus, a: u32, x: u32, y: u32, c: u32) -> u32 {
    (((uniform(rng, 0, a) | uniform(rng, x, y)) + c) % (y - x + 1)) + x
}

/// The C constants of NURand, one per field (clause 2.1.6); all terminals share them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NurandC {
    /// For C_LAST (A = 255), in [0, 255].
    pub c_last: u32,
    /// For C_ID (A = 1023), in [0, 1023].
    pub c_id: u32,
    /// For OL_I_ID (A = 8191), in [0, 8191].
    pub ol_i_id: u32,
}

impl NurandC {
    /// The constants of a load (C-Load), stored in `bmsql_config`.
    pub fn load(rng: &mut Xoshiro256PlusPlus) -> NurandC {
        NurandC {
            c_last: uniform(rng, 0, 255),
            c_id: uniform(rng, 0, 1023),
            ol_i_id: uniform(rng, 0, 8191),
        }
    }

    /// The constants of a run against a load whose C_LAST constant was
    /// `load_c_last`: C_LAST per 2.1.6.1 ([`c_delta_ok`]), the other two
    /// drawn afresh, as BenchmarkSQL does.
    pub fn run(load_c_last: u32, rng: &mut Xoshiro256PlusPlus) -> NurandC {
        let c_id = uniform(rng, 0, 1023);
        let ol_i_id = uniform(rng, 0, 8191);
        let c_last = loop {
            let c = uniform(rng, 0, 255);
            if c_delta_ok(load_c_last, c) {
                break c;
            }
        };
        NurandC {
            c_last,
            c_id,
            ol_i_id,
        }
    }
}

/// Clause 2.1.6.1: |C-Run − C-Load| for C_LAST is in [65, 119] and is neither 96 nor 112.
pub fn c_delta_ok(load: u32, run: u32) -> bool {
    let d = load.abs_diff(run);
    (65..=119).contains(&d) && d != 96 && d != 112
}

/// The syllables of C_LAST (clause 4.3.2.3).
pub const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// Appends the last name of `num` in [0, 999]: its three digits as syllables.
pub fn push_last_name(num: u32, out: &mut String) {
    for div in [100, 10, 1] {
        out.push_str(SYLLABLES[(num / div % 10) as usize]);
    }
}

/// The last name of `num` in [0, 999] (0 → BARBARBAR, 371 → PRICALLYOUGHT).
pub fn last_name(num: u32) -> String {
    let mut s = String::with_capacity(15);
    push_last_name(num, &mut s);
    s
}

pub(super) const ALNUM: &[u8; 62] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// Appends `len` random characters of `set`: several per 64-bit draw, each
/// the next digit of the draw read as a fraction in base `set.len()` —
/// unbiased to well under 0.1% at `per_draw` digits, and the loader's
/// dominant cost, so it matters in debug builds.
pub(super) fn push_random_chars(
    rng: &mut Xoshiro256PlusPlus,
    out: &mut String,
    len: u32,
    set: &[u8],
    per_draw: u32,
) {
    let n = set.len() as u128;
    let (mut x, mut left) = (0u64, 0u32);
    for _ in 0..len {
        if left == 0 {
            x = rng.next_u64();
            left = per_draw;
        }
        let wide = u128::from(x) * n;
        out.push(set[(wide >> 64) as usize] as char);
        x = wide as u64;
        left -= 1;
    }
}

/// A random alphanumeric string of exactly `len` characters (a-string, 4.3.2.2).
pub(super) fn push_alnum(rng: &mut Xoshiro256PlusPlus, out: &mut String, len: u32) {
    push_random_chars(rng, out, len, ALNUM, 8);
}

/// An a-string of random length in [lo, hi].
pub(super) fn push_astring(rng: &mut Xoshiro256PlusPlus, out: &mut String, lo: u32, hi: u32) {
    let len = uniform(rng, lo, hi);
    push_alnum(rng, out, len);
}

/// An n-string (digits) of exactly `len` characters.
pub(super) fn push_nstring(rng: &mut Xoshiro256PlusPlus, out: &mut String, len: u32) {
    push_random_chars(rng, out, len, b"0123456789", 15);
}

/// Two random upper-case letters (BenchmarkSQL's state).
pub(super) fn push_state(rng: &mut Xoshiro256PlusPlus, out: &mut String) {
    push_random_chars(rng, out, 2, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", 2);
}

/// Zip code: four random digits and "11111" (4.3.2.7).
pub(super) fn push_zip(rng: &mut Xoshiro256PlusPlus, out: &mut String) {
    push_nstring(rng, out, 4);
    out.push_str("11111");
}

/// i_data / s_data: 26–50 characters, 10% with "ORIGINAL" at a random place (4.3.3.1).
pub(super) fn push_data_with_original(rng: &mut Xoshiro256PlusPlus, out: &mut String) {
    if uniform(rng, 1, 100) <= 10 {
        let len = uniform(rng, 26, 50);
        let at = uniform(rng, 0, len - 8);
        push_alnum(rng, out, at);
        out.push_str("ORIGINAL");
        push_alnum(rng, out, len - 8 - at);
    } else {
        push_astring(rng, out, 26, 50);
    }
}

/// Appends an unsigned integer without the formatting machinery (cheap in debug builds).
pub(super) fn push_u64(out: &mut String, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for &b in &buf[i..] {
        out.push(b as char);
    }
}

/// `units / 10^scale` as a decimal literal with `scale` digits after the point.
pub(super) fn push_decimal(out: &mut String, units: i64, scale: u32) {
    if units < 0 {
        out.push('-');
    }
    let u = units.unsigned_abs();
    let p = 10u64.pow(scale);
    push_u64(out, u / p);
    out.push('.');
    let frac = u % p;
    let mut d = p / 10;
    while d > 0 {
        out.push((b'0' + (frac / d % 10) as u8) as char);
        d /= 10;
    }
}

/// Column separator and row end of COPY text.
pub(super) fn tab(out: &mut String) {
    out.push('\t');
}

pub(super) fn u(out: &mut String, v: u32) {
    push_u64(out, u64::from(v));
    out.push('\t');
}
