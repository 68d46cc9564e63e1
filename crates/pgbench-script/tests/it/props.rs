//! Properties: the C library functions pgbench relies on (`printf("%.15g")`,
//! `printf("%f")`, `strtod`, `atoi`) against the C library itself; expressions printed
//! and parsed back; SQL splitting invariants; integer arithmetic against checked Rust.

use std::ffi::CString;
use std::sync::Arc;

use csdchar_pgbench_script::eval::{EvalContext, eval};
use csdchar_pgbench_script::expr::{Expr, Func};
use csdchar_pgbench_script::value::{atoi, format_f, format_g15, strtod};
use csdchar_pgbench_script::vars::{Interner, Vars};
use csdchar_pgbench_script::{PgPrng, QueryMode, ScriptSet, Value, Version};
use proptest::prelude::*;

fn c_format(fmt: &str, d: f64) -> String {
    let f = CString::new(fmt).unwrap();
    let mut buf = vec![0u8; 512];
    // Safety: the buffer is 512 bytes and its length is passed; the format takes one double.
    let n = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), f.as_ptr(), d) };
    buf.truncate(n as usize);
    String::from_utf8(buf).unwrap()
}

/// glibc's strtod: value, bytes consumed, whether errno was ERANGE.
fn c_strtod(s: &str) -> (f64, usize, bool) {
    let c = CString::new(s).unwrap();
    let mut end: *mut libc::c_char = std::ptr::null_mut();
    // Safety: errno is this thread's; `c` is NUL-terminated and outlives the call, and
    // `end` receives a pointer into it.
    unsafe {
        *libc::__errno_location() = 0;
        let v = libc::strtod(c.as_ptr(), &mut end);
        let range = *libc::__errno_location() == libc::ERANGE;
        (v, end.offset_from(c.as_ptr()) as usize, range)
    }
}

fn same_double(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan() && a.is_sign_negative() == b.is_sign_negative())
        || a.to_bits() == b.to_bits()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn g15_is_printf(bits in any::<u64>()) {
        let d = f64::from_bits(bits);
        prop_assert_eq!(format_g15(d), c_format("%.15g", d));
    }

    #[test]
    fn g15_is_printf_on_round_numbers(m in -1_000_000_000i64..1_000_000_000, e in -30i32..30) {
        let d = m as f64 * 10f64.powi(e);
        prop_assert_eq!(format_g15(d), c_format("%.15g", d));
        prop_assert_eq!(format_g15(m as f64 / 7.0), c_format("%.15g", m as f64 / 7.0));
    }

    #[test]
    fn f_is_printf(m in any::<i64>(), e in -20i32..40) {
        let d = m as f64 * 10f64.powi(e);
        prop_assert_eq!(format_f(d), c_format("%f", d));
    }

    #[test]
    fn strtod_is_glibc(s in "[ \t]?[-+]?(0[xX])?[0-9a-fA-F.]{0,6}([eEpP][-+]?[0-9]{0,4})?[ a-z()]?|[-+]?(inf|INF|infinity|nan|NaN|nan\\(x1\\)|in|na)") {
        let ours = strtod(s.as_bytes());
        let theirs = c_strtod(&s);
        match ours {
            None => prop_assert_eq!(theirs.1, 0, "{:?}", s),
            Some((v, used, range)) => {
                prop_assert_eq!(used, theirs.1, "{:?}", s);
                prop_assert!(same_double(v, theirs.0), "{:?}: {} vs {}", s, v, theirs.0);
                prop_assert_eq!(range, theirs.2, "{:?}", s);
            }
        }
    }

    #[test]
    fn decimal_strtod_is_glibc(m in any::<u64>(), frac in "[0-9]{0,30}", e in -400i32..400) {
        let s = format!("{m}.{frac}e{e}");
        let (v, used, range) = strtod(s.as_bytes()).unwrap();
        let theirs = c_strtod(&s);
        prop_assert_eq!(used, theirs.1);
        prop_assert!(same_double(v, theirs.0), "{}: {} vs {}", s, v, theirs.0);
        prop_assert_eq!(range, theirs.2, "{}", s);
    }

    #[test]
    fn atoi_is_glibc(s in "[ \t]{0,2}[-+]?[0-9]{0,25}[a-z.]?") {
        let c = CString::new(s.clone()).unwrap();
        // Safety: `c` is NUL-terminated.
        let theirs = unsafe { libc::atoi(c.as_ptr()) };
        prop_assert_eq!(atoi(s.as_bytes()), theirs);
    }
}

/// Prints an expression fully parenthesized, in the language's syntax.
fn print(e: &Expr, names: &Interner) -> String {
    match e {
        Expr::Const(Value::Int(i)) => i.to_string(),
        Expr::Const(Value::Double(d)) => format!("{d:e}"),
        Expr::Const(Value::Bool(b)) => b.to_string().to_uppercase(),
        Expr::Const(Value::Null) => "NULL".into(),
        Expr::Var(id) => format!(":{}", String::from_utf8_lossy(names.name(*id))),
        Expr::Call(f, a) => {
            let p = |i: usize| print(&a[i], names);
            let bin = |op: &str| format!("({} {op} {})", p(0), p(1));
            match f {
                Func::Add => bin("+"),
                Func::Sub => bin("-"),
                Func::Mul => bin("*"),
                Func::Div => bin("/"),
                Func::Mod => bin("%"),
                Func::And => bin("AND"),
                Func::Or => bin("OR"),
                Func::BitAnd => bin("&"),
                Func::BitOr => bin("|"),
                Func::BitXor => bin("#"),
                Func::Lshift => bin("<<"),
                Func::Rshift => bin(">>"),
                Func::Eq => bin("="),
                Func::Ne => bin("<>"),
                Func::Le => bin("<="),
                Func::Lt => bin("<"),
                Func::Not => format!("(NOT {})", p(0)),
                Func::Is => format!("({} IS {})", p(0), p(1)),
                Func::Case => {
                    let mut s = String::from("CASE");
                    let n = a.len();
                    for k in (0..n - 1).step_by(2) {
                        s.push_str(&format!(" WHEN {} THEN {}", p(k), p(k + 1)));
                    }
                    format!("{s} ELSE {} END", p(n - 1))
                }
                Func::Abs => format!("abs({})", p(0)),
                Func::Least => format!(
                    "least({})",
                    (0..a.len()).map(p).collect::<Vec<_>>().join(", ")
                ),
                Func::HashFnv1a => format!("hash_fnv1a({}, {})", p(0), p(1)),
                _ => unreachable!("not generated"),
            }
        }
    }
}

fn arb_expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        (0i64..1_000_000).prop_map(|i| Expr::Const(Value::Int(i))),
        (0.0f64..1e6).prop_map(|d| Expr::Const(Value::Double(d))),
        any::<bool>().prop_map(|b| Expr::Const(Value::Bool(b))),
        Just(Expr::Const(Value::Null)),
    ];
    leaf.prop_recursive(5, 40, 4, |inner| {
        let bins = [
            Func::Add,
            Func::Sub,
            Func::Mul,
            Func::Div,
            Func::Mod,
            Func::And,
            Func::Or,
            Func::BitAnd,
            Func::BitOr,
            Func::BitXor,
            Func::Lshift,
            Func::Rshift,
            Func::Eq,
            Func::Ne,
            Func::Le,
            Func::Lt,
            Func::HashFnv1a,
        ];
        prop_oneof![
            (
                prop::sample::select(bins.to_vec()),
                inner.clone(),
                inner.clone()
            )
                .prop_map(|(f, a, b)| Expr::Call(f, vec![a, b].into())),
            inner
                .clone()
                .prop_map(|a| Expr::Call(Func::Not, vec![a].into())),
            inner
                .clone()
                .prop_map(|a| Expr::Call(Func::Abs, vec![a].into())),
            inner
                .clone()
                .prop_map(|a| Expr::Call(Func::Is, vec![a, Expr::Const(Value::Null)].into())),
            prop::collection::vec(inner.clone(), 1..4)
                .prop_map(|v| Expr::Call(Func::Least, v.into())),
            (inner.clone(), inner.clone(), inner)
                .prop_map(|(c, v, e)| Expr::Call(Func::Case, vec![c, v, e].into())),
        ]
    })
}

fn parse_set(text: &str) -> Option<Expr> {
    let mut s = ScriptSet::new(Version::V18);
    s.add_file(format!("\\set x {text}\n").as_bytes(), "p", 1)
        .ok()?;
    let p = s.compile(QueryMode::Simple).ok()?;
    match &p.scripts()[0].commands()[0].kind {
        csdchar_pgbench_script::script::CommandKind::Set { expr, .. } => Some(expr.clone()),
        _ => None,
    }
}

fn evaluate(e: &Expr) -> Result<Value, String> {
    let names = Interner::default();
    let mut vars = Vars::new(0);
    let mut rng = PgPrng::seed(1);
    let mut debug = |_: &str| {};
    let mut cx = EvalContext {
        vars: &mut vars,
        names: &names,
        rng: &mut rng,
        debug: &mut debug,
        script: 0,
        command: 0,
    };
    eval(e, &mut cx).map_err(|e| format!("{:?}", e.0))
}

fn same_value(a: &Result<Value, String>, b: &Result<Value, String>) -> bool {
    match (a, b) {
        (Ok(Value::Double(x)), Ok(Value::Double(y))) => same_double(*x, *y),
        _ => a == b,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn printed_expressions_parse_back(e in arb_expr()) {
        let names = Interner::default();
        let text = print(&e, &names);
        let back = parse_set(&text);
        prop_assert!(back.is_some(), "{}", text);
        let back = back.unwrap();
        // The same values (doubles printed in full precision parse back exactly).
        prop_assert!(same_value(&evaluate(&e), &evaluate(&back)), "{}", text);
    }

    #[test]
    fn integer_arithmetic_errors_exactly_on_overflow(a in any::<i64>(), b in any::<i64>()) {
        let call = |f: Func| {
            evaluate(&Expr::Call(f, vec![Expr::Const(Value::Int(a)), Expr::Const(Value::Int(b))].into()))
        };
        prop_assert_eq!(call(Func::Add).ok(), a.checked_add(b).map(Value::Int));
        prop_assert_eq!(call(Func::Sub).ok(), a.checked_sub(b).map(Value::Int));
        prop_assert_eq!(call(Func::Mul).ok(), a.checked_mul(b).map(Value::Int));
        let div = call(Func::Div).ok();
        prop_assert_eq!(div, if b == 0 { None } else { a.checked_div(b).map(Value::Int) });
        let m = call(Func::Mod).ok();
        prop_assert_eq!(m, if b == 0 { None } else { Some(Value::Int(a.wrapping_rem(b))) });
    }

    #[test]
    fn splitting_keeps_every_statement(parts in prop::collection::vec("[a-z0-9 ]{1,12}|'[a-z;]{0,5}'|\\$\\$[a-z;]{0,5}\\$\\$|/\\* ; \\*/|\\([a-z;]{0,4}\\)", 1..6), n in 1usize..5) {
        // n statements made of the same parts: as many SQL commands, each ending in ";".
        let stmt = format!("SELECT {}", parts.join(" "));
        let text = vec![stmt.clone(); n].join(";\n") + ";\n";
        let mut s = ScriptSet::new(Version::V18);
        s.add_file(text.as_bytes(), "s", 1).unwrap();
        let p = Arc::new(s.compile(QueryMode::Simple).unwrap());
        let cmds = p.scripts()[0].commands();
        prop_assert_eq!(cmds.len(), n, "{}", text);
        for c in cmds {
            match &c.kind {
                csdchar_pgbench_script::script::CommandKind::Sql { text: t, .. } => {
                    prop_assert_eq!(String::from_utf8_lossy(t).into_owned(), format!("{stmt};"));
                }
                _ => prop_assert!(false),
            }
        }
    }
}
