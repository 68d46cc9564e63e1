//! pgbench's random numbers, bit for bit: PostgreSQL's `pg_prng` (xoroshiro128** 1.0
//! seeded through splitmix64, `src/common/pg_prng.c`, 15 and 18 alike) and pgbench's
//! distributions, permutation and hashes on top of it (`pgbench.c`).
//!
//! Written out here rather than taken from a crate: the generator is twenty lines, and
//! what makes `--random-seed N` reproduce pgbench's values is pg_prng's own seeding,
//! range reduction (bitmask rejection) and double extraction, which no generic crate
//! has.

/// pgbench's smallest `random_gaussian` parameter.
pub const MIN_GAUSSIAN_PARAM: f64 = 2.0;
/// pgbench's smallest `random_zipfian` parameter.
pub const MIN_ZIPFIAN_PARAM: f64 = 1.001;
/// pgbench's largest `random_zipfian` parameter.
pub const MAX_ZIPFIAN_PARAM: f64 = 1000.0;

/// The state of one pg_prng sequence (`pg_prng_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgPrng {
    s0: u64,
    s1: u64,
}

/// C's `(int64) d` as x86-64 computes it: out of range and NaN give INT64_MIN (Rust's
/// `as` would saturate).
pub fn c_double_to_int64(d: f64) -> i64 {
    if d.is_nan() || !(-9223372036854775808.0..9223372036854775808.0).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut v = *state;
    v = (v ^ (v >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    v = (v ^ (v >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    v ^ (v >> 31)
}

impl PgPrng {
    /// `pg_prng_seed`: the state from a 64-bit seed.
    pub fn seed(seed: u64) -> PgPrng {
        let mut s = seed;
        let s0 = splitmix64(&mut s);
        let s1 = splitmix64(&mut s);
        if s0 == 0 && s1 == 0 {
            // pg_prng_seed_check: all-zero is a fixed point; Knuth's LCG constants instead.
            PgPrng {
                s0: 0x5851_F42D_4C95_7F2D,
                s1: 0x1405_7B7E_F767_814F,
            }
        } else {
            PgPrng { s0, s1 }
        }
    }

    /// `pg_prng_uint64`: the next 64 bits (xoroshiro128**).
    pub fn next_u64(&mut self) -> u64 {
        let s0 = self.s0;
        let sx = self.s1 ^ s0;
        let val = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        self.s0 = s0.rotate_left(24) ^ sx ^ (sx << 16);
        self.s1 = sx.rotate_left(37);
        val
    }

    /// `pg_prng_uint64_range`: uniform in `[rmin, rmax]` by bitmask rejection; `rmin`
    /// when the range is empty.
    pub fn uint64_range(&mut self, rmin: u64, rmax: u64) -> u64 {
        if rmax > rmin {
            let range = rmax - rmin;
            let rshift = range.leading_zeros();
            loop {
                let v = self.next_u64() >> rshift;
                if v <= range {
                    return rmin + v;
                }
            }
        } else {
            rmin
        }
    }

    /// `pg_prng_double`: uniform in `[0, 1)` from the top 52 bits.
    pub fn double(&mut self) -> f64 {
        let v = self.next_u64();
        (v >> 12) as f64 * (1.0 / (1u64 << 52) as f64)
    }

    /// `pg_prng_double_normal` (18; 15 inlines the same Box–Muller transform in
    /// `getGaussianRand`, drawing the same two doubles in the same order).
    pub fn double_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.double();
        let u2 = 1.0 - self.double();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).sin()
    }

    /// pgbench's `getrand`: uniform in `[min, max]` (the caller has checked that
    /// `max - min` does not overflow).
    pub fn getrand(&mut self, min: i64, max: i64) -> i64 {
        min.wrapping_add(self.uint64_range(0, max.wrapping_sub(min) as u64) as i64)
    }

    /// pgbench's `getExponentialRand`: `parameter` > 0.
    pub fn exponential(&mut self, min: i64, max: i64, parameter: f64) -> i64 {
        let cut = (-parameter).exp();
        let uniform = 1.0 - self.double();
        let rand = -(cut + (1.0 - cut) * uniform).ln() / parameter;
        min.wrapping_add(c_double_to_int64(
            (max.wrapping_sub(min).wrapping_add(1)) as f64 * rand,
        ))
    }

    /// pgbench's `getGaussianRand`: `parameter` ≥ 2.
    pub fn gaussian(&mut self, min: i64, max: i64, parameter: f64) -> i64 {
        let stdev = loop {
            let z = self.double_normal();
            if !(z < -parameter || z >= parameter) {
                break z;
            }
        };
        let rand = (stdev + parameter) / (parameter * 2.0);
        min.wrapping_add(c_double_to_int64(
            (max.wrapping_sub(min).wrapping_add(1)) as f64 * rand,
        ))
    }

    /// pgbench's `getPoissonRand` (the `--rate` schedule): a delay around `center`.
    pub fn poisson(&mut self, center: f64) -> i64 {
        let uniform = 1.0 - self.double();
        c_double_to_int64(-uniform.ln() * center + 0.5)
    }

    /// pgbench's `getZipfianRand` (Devroye's rejection method): `s` in
    /// [`MIN_ZIPFIAN_PARAM`, `MAX_ZIPFIAN_PARAM`].
    pub fn zipfian(&mut self, min: i64, max: i64, s: f64) -> i64 {
        let n = max.wrapping_sub(min).wrapping_add(1);
        min.wrapping_sub(1)
            .wrapping_add(self.iterative_zipfian(n, s))
    }

    fn iterative_zipfian(&mut self, n: i64, s: f64) -> i64 {
        let b = 2.0f64.powf(s - 1.0);
        if n <= 1 {
            return 1;
        }
        loop {
            let u = self.double();
            let v = self.double();
            let x = u.powf(-1.0 / (s - 1.0)).floor();
            let t = (1.0 + 1.0 / x).powf(s - 1.0);
            if v * x * (t - 1.0) / (b - 1.0) <= t / b && x <= n as f64 {
                return c_double_to_int64(x);
            }
        }
    }
}

/// pgbench's `getHashFnv1a`: FNV-1a over the value's 8 bytes, low byte first.
pub fn hash_fnv1a(val: i64, seed: u64) -> i64 {
    const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
    const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    let mut result = FNV_OFFSET_BASIS ^ seed;
    let mut v = val;
    for _ in 0..8 {
        let octet = (v & 0xff) as u64;
        // An arithmetic shift, as C's on a signed value.
        v >>= 8;
        result = (result ^ octet).wrapping_mul(FNV_PRIME);
    }
    result as i64
}

/// pgbench's `getHashMurmur2`: 64-bit MurmurHash2 of the value.
pub fn hash_murmur2(val: i64, seed: u64) -> i64 {
    const MM2_MUL: u64 = 0xc6a4_a793_5bd1_e995;
    const MM2_MUL_TIMES_8: u64 = 0x3525_3c9a_de8f_4ca8;
    const MM2_ROT: u32 = 47;
    let mut result = seed ^ MM2_MUL_TIMES_8;
    let mut k = val as u64;
    k = k.wrapping_mul(MM2_MUL);
    k ^= k >> MM2_ROT;
    k = k.wrapping_mul(MM2_MUL);
    result ^= k;
    result = result.wrapping_mul(MM2_MUL);
    result ^= result >> MM2_ROT;
    result = result.wrapping_mul(MM2_MUL);
    result ^= result >> MM2_ROT;
    result as i64
}

/// pgbench's `permute` (14+; pg_prng in 15 and 18): a pseudorandom permutation of
/// `[0, size)`, `size` > 0 checked by the caller.
pub fn permute(val: i64, isize: i64, seed: i64) -> i64 {
    if isize < 2 {
        return 0;
    }
    let mut state = PgPrng::seed(seed as u64);
    let size = isize as u64;
    let mut v = (val as u64) % size;
    let masklen = 63 - size.leading_zeros();
    let mask = (1u64 << masklen) - 1;
    for _ in 0..6 {
        let m = (state.next_u64() & mask) | 1;
        let r = state.next_u64() & mask;
        if v <= mask {
            v = (v.wrapping_mul(m) ^ r) & mask;
            v = ((v << 1) & mask) | (v >> (masklen - 1));
        }
        let m = (state.next_u64() & mask) | 1;
        let r = state.next_u64() & mask;
        let mut t = size - 1 - v;
        if t <= mask {
            t = (t.wrapping_mul(m) ^ r) & mask;
            t = ((t << 1) & mask) | (t >> (masklen - 1));
            v = size - 1 - t;
        }
        let r = state.uint64_range(0, size - 1);
        v = (v.wrapping_add(r)) % size;
    }
    v as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_match_pgbench_tap_values() {
        // 001_pgbench_with_server.pl, commands 49 and 51.
        assert_eq!(hash_murmur2(10, 5432), -5817877081768721676);
        assert_eq!(hash_fnv1a(10, 5432), -7793829335365542153);
    }

    #[test]
    fn permute_matches_pgbench_portability_values() {
        // 001_pgbench_with_server.pl: size = INT64_MAX - 10, seed 5432.
        let size = i64::MAX - 10;
        let want = [
            520382784483822430,
            1143715004660802862,
            447293596416496998,
            916527772266572956,
            2763809008686028849,
            8648551549198294572,
            4542876852200565125,
        ];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(
                permute(size - 1 - k as i64, size, 5432),
                *w,
                "size-{}",
                k + 1
            );
        }
        assert_eq!(permute(0, 2, 5431), 0);
        assert_eq!(permute(1, 2, 5431), 1);
        assert_eq!(permute(0, 2, 5433), 1);
        assert_eq!(permute(1, 2, 5433), 0);
        assert_eq!(permute(123, 1, 7), 0);
    }

    #[test]
    fn permute_is_a_bijection_on_small_sizes() {
        for size in 1..70i64 {
            for seed in [0i64, 1, -5, 5432] {
                let mut seen = vec![false; size as usize];
                for i in 0..size {
                    let p = permute(i, size, seed);
                    assert!((0..size).contains(&p));
                    assert!(!seen[p as usize], "size {size} seed {seed}");
                    seen[p as usize] = true;
                    // Inputs are taken modulo size (as unsigned).
                    assert_eq!(permute(i + size, size, seed), p);
                }
            }
        }
    }

    #[test]
    fn seed_zero_state_and_ranges() {
        // splitmix64 from seed 0: the first outputs of the reference generator.
        let mut s = 0u64;
        assert_eq!(splitmix64(&mut s), 0xE220_A839_7B1D_CDAF);
        assert_eq!(splitmix64(&mut s), 0x6E78_9E6A_A1B9_65F4);
        let mut r = PgPrng::seed(42);
        for _ in 0..1000 {
            let v = r.uint64_range(10, 19);
            assert!((10..=19).contains(&v));
            let d = r.double();
            assert!((0.0..1.0).contains(&d));
        }
        assert_eq!(r.uint64_range(7, 7), 7);
        assert_eq!(r.uint64_range(8, 7), 8);
    }
}
