//! Evaluation of expressions with pgbench's exact semantics (`evaluateExpr`,
//! `evalLazyFunc`, `evalStandardFunc`): int64 arithmetic with overflow errors, doubles
//! as C computes them, half-to-even rounding to int, NULL propagation, lazy
//! `AND`/`OR`/`CASE`, and the random functions drawing from the client's pg_prng.

use crate::expr::{Expr, Func};
use crate::prng::{
    MAX_ZIPFIAN_PARAM, MIN_GAUSSIAN_PARAM, MIN_ZIPFIAN_PARAM, PgPrng, hash_fnv1a, hash_murmur2,
    permute,
};
use crate::value::{TextValueError, Value, format_f};
use crate::vars::{Interner, ReadError, Vars};

/// Why an evaluation failed: pgbench's message, or none (an empty string variable,
/// which pgbench rejects without a message of its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError(pub Option<String>);

impl EvalError {
    fn msg(s: impl Into<String>) -> EvalError {
        EvalError(Some(s.into()))
    }
}

/// At most this many arguments are evaluated for one call (`MAX_FARGS`).
pub const MAX_FUNCTION_ARGS: usize = 16;

/// What an evaluation reads and draws from.
pub struct EvalContext<'a> {
    /// The client's variables.
    pub vars: &'a mut Vars,
    /// Their names (for messages).
    pub names: &'a Interner,
    /// The client's random sequence (`cs_func_rs`).
    pub rng: &'a mut PgPrng,
    /// Where `debug()` writes its line, with pgbench's prefix
    /// `debug(script=S,command=C): ` already applied.
    pub debug: &'a mut dyn FnMut(&str),
    /// The script's index, from 0 (for `debug()`).
    pub script: usize,
    /// The command's index, from 0 (`debug()` prints it from 1).
    pub command: usize,
}

fn coerce_bool(v: &Value) -> Result<bool, EvalError> {
    match v {
        Value::Bool(b) => Ok(*b),
        _ => Err(EvalError::msg(format!(
            "cannot coerce {} to boolean",
            v.type_name()
        ))),
    }
}

/// `coerceToInt`: doubles rounded half to even (`rint`) and range-checked.
pub fn coerce_int(v: &Value) -> Result<i64, EvalError> {
    match *v {
        Value::Int(i) => Ok(i),
        Value::Double(d) => {
            let r = d.round_ties_even();
            // FLOAT8_FITS_IN_INT64: [-2^63, 2^63).
            if r.is_nan() || !(-9223372036854775808.0..9223372036854775808.0).contains(&r) {
                Err(EvalError::msg(format!(
                    "double to int overflow for {}",
                    format_f(r)
                )))
            } else {
                Ok(r as i64)
            }
        }
        _ => Err(EvalError::msg(format!(
            "cannot coerce {} to int",
            v.type_name()
        ))),
    }
}

fn coerce_double(v: &Value) -> Result<f64, EvalError> {
    match *v {
        Value::Double(d) => Ok(d),
        Value::Int(i) => Ok(i as f64),
        _ => Err(EvalError::msg(format!(
            "cannot coerce {} to double",
            v.type_name()
        ))),
    }
}

/// The bytes of the value's union that pgbench's `IS` compares (`u.bval`: the first
/// byte of the int64 or double, little-endian).
fn first_byte(v: &Value) -> u8 {
    match *v {
        Value::Null => 0,
        Value::Bool(b) => b as u8,
        Value::Int(i) => i.to_le_bytes()[0],
        Value::Double(d) => d.to_le_bytes()[0],
    }
}

/// Evaluates `e`.
pub fn eval(e: &Expr, cx: &mut EvalContext<'_>) -> Result<Value, EvalError> {
    match e {
        Expr::Const(v) => Ok(*v),
        Expr::Var(id) => match cx.vars.value(*id) {
            Ok(v) => Ok(v),
            Err(ReadError::Undefined) => Err(EvalError::msg(format!(
                "undefined variable \"{}\"",
                String::from_utf8_lossy(cx.names.name(*id))
            ))),
            Err(ReadError::Text(t)) => {
                let text =
                    String::from_utf8_lossy(cx.vars.text(*id).unwrap_or_default()).into_owned();
                let name = String::from_utf8_lossy(cx.names.name(*id)).into_owned();
                Err(match t {
                    TextValueError::Empty => EvalError(None),
                    TextValueError::OutOfRange => {
                        EvalError::msg(format!("value \"{text}\" is out of range for type bigint"))
                    }
                    TextValueError::Malformed => {
                        EvalError::msg(format!("malformed variable \"{name}\" value: \"{text}\""))
                    }
                })
            }
        },
        Expr::Call(f, args) => match f {
            Func::And | Func::Or | Func::Case => lazy(*f, args, cx),
            _ => standard(*f, args, cx),
        },
    }
}

fn lazy(f: Func, args: &[Expr], cx: &mut EvalContext<'_>) -> Result<Value, EvalError> {
    let a1 = eval(&args[0], cx)?;
    match f {
        Func::And | Func::Or => {
            if a1 == Value::Null {
                return Ok(Value::Null);
            }
            let b1 = coerce_bool(&a1)?;
            // AND stops at false, OR at true.
            if b1 == (f == Func::Or) {
                return Ok(Value::Bool(b1));
            }
            let a2 = eval(&args[1], cx)?;
            if a2 == Value::Null {
                return Ok(Value::Null);
            }
            Ok(Value::Bool(coerce_bool(&a2)?))
        }
        _ => {
            // CASE: (cond, value)*, else.
            if a1.truth() {
                return eval(&args[1], cx);
            }
            let rest = &args[2..];
            if rest.len() == 1 {
                eval(&rest[0], cx)
            } else {
                lazy(Func::Case, rest, cx)
            }
        }
    }
}

fn standard(f: Func, args: &[Expr], cx: &mut EvalContext<'_>) -> Result<Value, EvalError> {
    let mut v = [Value::Null; MAX_FUNCTION_ARGS];
    let mut has_null = false;
    for (i, a) in args.iter().take(MAX_FUNCTION_ARGS).enumerate() {
        v[i] = eval(a, cx)?;
        has_null |= v[i] == Value::Null;
    }
    if args.len() > MAX_FUNCTION_ARGS {
        return Err(EvalError::msg(format!(
            "too many function arguments, maximum is {MAX_FUNCTION_ARGS}"
        )));
    }
    let n = args.len();
    let v = &v[..n];
    if has_null && f != Func::Is && f != Func::Debug {
        return Ok(Value::Null);
    }
    match f {
        Func::Add
        | Func::Sub
        | Func::Mul
        | Func::Div
        | Func::Mod
        | Func::Eq
        | Func::Ne
        | Func::Le
        | Func::Lt => arith(f, &v[0], &v[1]),
        Func::BitAnd | Func::BitOr | Func::BitXor | Func::Lshift | Func::Rshift => {
            let l = coerce_int(&v[0])?;
            let r = coerce_int(&v[1])?;
            Ok(Value::Int(match f {
                Func::BitAnd => l & r,
                Func::BitOr => l | r,
                Func::BitXor => l ^ r,
                // x86's shift takes the count modulo 64, as pgbench's C does there.
                Func::Lshift => l.wrapping_shl(r as u32),
                _ => l.wrapping_shr(r as u32),
            }))
        }
        Func::Not => Ok(Value::Bool(!coerce_bool(&v[0])?)),
        Func::Pi => Ok(Value::Double(std::f64::consts::PI)),
        Func::Abs => match v[0] {
            // No overflow check: abs(INT64_MIN) is INT64_MIN.
            Value::Int(i) => Ok(Value::Int(i.wrapping_abs())),
            Value::Double(d) => Ok(Value::Double(if d < 0.0 { -d } else { d })),
            // pgbench reads the union's double here (an unchecked Assert); refused.
            _ => Err(EvalError::msg(format!(
                "cannot coerce {} to double",
                v[0].type_name()
            ))),
        },
        Func::Debug => {
            let line = format!(
                "debug(script={},command={}): {}",
                cx.script,
                cx.command + 1,
                v[0].debug_text()
            );
            (cx.debug)(&line);
            Ok(v[0])
        }
        Func::Double | Func::Sqrt | Func::Ln | Func::Exp => {
            let d = coerce_double(&v[0])?;
            Ok(Value::Double(match f {
                Func::Sqrt => d.sqrt(),
                Func::Ln => d.ln(),
                Func::Exp => d.exp(),
                _ => d,
            }))
        }
        Func::Int => Ok(Value::Int(coerce_int(&v[0])?)),
        Func::Least | Func::Greatest => {
            let least = f == Func::Least;
            if v.iter().any(|x| matches!(x, Value::Double(_))) {
                let mut m = coerce_double(&v[0])?;
                for x in &v[1..] {
                    let d = coerce_double(x)?;
                    // C's Min/Max macros: ((a) < (b) ? (a) : (b)).
                    m = if least {
                        if m < d { m } else { d }
                    } else if m > d {
                        m
                    } else {
                        d
                    };
                }
                Ok(Value::Double(m))
            } else {
                let mut m = coerce_int(&v[0])?;
                for x in &v[1..] {
                    let i = coerce_int(x)?;
                    m = if least { m.min(i) } else { m.max(i) };
                }
                Ok(Value::Int(m))
            }
        }
        Func::Random | Func::RandomExponential | Func::RandomGaussian | Func::RandomZipfian => {
            random(f, v, cx)
        }
        Func::Pow => {
            let l = coerce_double(&v[0])?;
            let r = coerce_double(&v[1])?;
            Ok(Value::Double(l.powf(r)))
        }
        Func::Is => Ok(Value::Bool(
            std::mem::discriminant(&v[0]) == std::mem::discriminant(&v[1])
                && first_byte(&v[0]) == first_byte(&v[1]),
        )),
        Func::HashFnv1a | Func::HashMurmur2 => {
            let val = coerce_int(&v[0])?;
            let seed = coerce_int(&v[1])? as u64;
            Ok(Value::Int(if f == Func::HashMurmur2 {
                hash_murmur2(val, seed)
            } else {
                hash_fnv1a(val, seed)
            }))
        }
        Func::Permute => {
            let val = coerce_int(&v[0])?;
            let size = coerce_int(&v[1])?;
            let seed = coerce_int(&v[2])?;
            if size <= 0 {
                return Err(EvalError::msg(
                    "permute size parameter must be greater than zero",
                ));
            }
            Ok(Value::Int(permute(val, size, seed)))
        }
        Func::And | Func::Or | Func::Case => unreachable!("lazy functions"),
    }
}

fn arith(f: Func, l: &Value, r: &Value) -> Result<Value, EvalError> {
    if (matches!(l, Value::Double(_)) || matches!(r, Value::Double(_))) && f != Func::Mod {
        let ld = coerce_double(l)?;
        let rd = coerce_double(r)?;
        return Ok(match f {
            Func::Add => Value::Double(ld + rd),
            Func::Sub => Value::Double(ld - rd),
            Func::Mul => Value::Double(ld * rd),
            Func::Div => Value::Double(ld / rd),
            Func::Eq => Value::Bool(ld == rd),
            Func::Ne => Value::Bool(ld != rd),
            Func::Le => Value::Bool(ld <= rd),
            _ => Value::Bool(ld < rd),
        });
    }
    let li = coerce_int(l)?;
    let ri = coerce_int(r)?;
    let overflow = |op: &str| EvalError::msg(format!("bigint {op} out of range"));
    Ok(match f {
        Func::Add => Value::Int(li.checked_add(ri).ok_or_else(|| overflow("add"))?),
        Func::Sub => Value::Int(li.checked_sub(ri).ok_or_else(|| overflow("sub"))?),
        Func::Mul => Value::Int(li.checked_mul(ri).ok_or_else(|| overflow("mul"))?),
        Func::Eq => Value::Bool(li == ri),
        Func::Ne => Value::Bool(li != ri),
        Func::Le => Value::Bool(li <= ri),
        Func::Lt => Value::Bool(li < ri),
        _ => {
            if ri == 0 {
                return Err(EvalError::msg("division by zero"));
            }
            if ri == -1 {
                if f == Func::Div {
                    if li == i64::MIN {
                        return Err(overflow("div"));
                    }
                    Value::Int(-li)
                } else {
                    Value::Int(0)
                }
            } else if f == Func::Div {
                Value::Int(li / ri)
            } else {
                Value::Int(li % ri)
            }
        }
    })
}

fn random(f: Func, v: &[Value], cx: &mut EvalContext<'_>) -> Result<Value, EvalError> {
    let imin = coerce_int(&v[0])?;
    let imax = coerce_int(&v[1])?;
    if imin > imax {
        return Err(EvalError::msg("empty range given to random"));
    }
    if imax
        .checked_sub(imin)
        .and_then(|d| d.checked_add(1))
        .is_none()
    {
        return Err(EvalError::msg("random range is too large"));
    }
    if f == Func::Random {
        return Ok(Value::Int(cx.rng.getrand(imin, imax)));
    }
    let param = coerce_double(&v[2])?;
    match f {
        Func::RandomGaussian => {
            if param < MIN_GAUSSIAN_PARAM {
                return Err(EvalError::msg(format!(
                    "gaussian parameter must be at least {} (not {})",
                    format_f(MIN_GAUSSIAN_PARAM),
                    format_f(param)
                )));
            }
            Ok(Value::Int(cx.rng.gaussian(imin, imax, param)))
        }
        Func::RandomZipfian => {
            // NaN passes both comparisons, as in pgbench (a range's `contains` would not).
            #[allow(clippy::manual_range_contains)]
            if param < MIN_ZIPFIAN_PARAM || param > MAX_ZIPFIAN_PARAM {
                return Err(EvalError::msg(format!(
                    "zipfian parameter must be in range [{:.3}, {:.0}] (not {})",
                    MIN_ZIPFIAN_PARAM,
                    MAX_ZIPFIAN_PARAM,
                    format_f(param)
                )));
            }
            Ok(Value::Int(cx.rng.zipfian(imin, imax, param)))
        }
        _ => {
            // `param <= 0.0` is false for NaN: pgbench lets NaN through, and so do we.
            if param <= 0.0 {
                return Err(EvalError::msg(format!(
                    "exponential parameter must be greater than zero (not {})",
                    format_f(param)
                )));
            }
            Ok(Value::Int(cx.rng.exponential(imin, imax, param)))
        }
    }
}
