use expect_test::{expect, Expect};

use super::*;

// Variables are numbered so that display order (by id) reads naturally.
const NAMES: [&str; 8] = ["N", "M", "C", "H", "W", "KH", "K", "S"];

fn name(v: DimVar) -> String {
    NAMES.get(v.0 as usize).map_or_else(|| format!("d{}", v.0), |s| s.to_string())
}

fn named(s: &str) -> Dim {
    let id = NAMES.iter().position(|n| *n == s).expect("test variable");
    Dim::var(DimVar(id as u32))
}

fn c(k: i64) -> Dim {
    Dim::constant(k)
}

// `Dim` derives `Ord`, so `a.min(&b)` on an owned `a` would pick `Ord::min`;
// these spell out the symbolic operations.
fn min(a: &Dim, b: &Dim) -> Dim {
    Dim::min(a, b)
}

fn max(a: &Dim, b: &Dim) -> Dim {
    Dim::max(a, b)
}

fn div(a: &Dim, b: &Dim) -> Dim {
    a.floor_div(b).expect("representable quotient")
}

fn check_display(d: &Dim, expect: Expect) {
    expect.assert_eq(&d.display(&name));
}

fn check_le(a: &Dim, b: &Dim, expected: Truth) {
    assert_eq!(a.prove_le(b), expected, "{} <= {}", a.display(&name), b.display(&name));
}

fn check_lt(a: &Dim, b: &Dim, expected: Truth) {
    assert_eq!(a.prove_lt(b), expected, "{} < {}", a.display(&name), b.display(&name));
}

/// Asserts the invariants of the module documentation (for values built
/// from small numbers, where no overflow fallback applies).
fn assert_normal(d: &Dim) {
    for (m, &coef) in &d.terms {
        assert_ne!(coef, 0, "zero coefficient in {d}");
        assert!(m.0.windows(2).all(|w| w[0].0 < w[1].0), "unsorted monomial in {d}");
        for (atom, pow) in &m.0 {
            assert!(*pow >= 1, "zero power in {d}");
            match atom {
                Atom::Var(_) => {}
                Atom::FloorDiv(n, b) => {
                    assert_normal(n);
                    assert_normal(b);
                    if let Some(k) = b.as_constant() {
                        assert!(n.as_constant().is_none(), "constant quotient left unfolded in {d}");
                        assert!(k >= 2, "constant divisor {k} in {d}");
                        assert!((0..k).contains(&n.constant_term()), "unreduced constant in {d}");
                        assert!(
                            n.terms.iter().any(|(m, &coef)| !m.is_one() && coef % k != 0),
                            "exact division left unfolded in {d}"
                        );
                        assert!(
                            !matches!(n.as_atom(), Some(Atom::FloorDiv(_, inner)) if inner.as_constant().is_some()),
                            "nested division by constants in {d}"
                        );
                    }
                }
                Atom::Min(ops) | Atom::Max(ops) => {
                    assert!(ops.len() >= 2, "degenerate min/max in {d}");
                    assert!(ops.windows(2).all(|w| w[0] < w[1]), "unsorted min/max in {d}");
                    for op in ops {
                        assert_normal(op);
                        let nested = match atom {
                            Atom::Min(_) => matches!(op.as_atom(), Some(Atom::Min(_))),
                            _ => matches!(op.as_atom(), Some(Atom::Max(_))),
                        };
                        assert!(!nested, "nested min/max in {d}");
                    }
                }
                Atom::Sum(..) | Atom::Product(..) => panic!("overflow atom without overflow in {d}"),
            }
        }
    }
}

#[test]
fn equal_polynomials_are_structurally_equal() {
    let (h, k, cc, w, n) = (named("H"), named("K"), named("C"), named("W"), named("N"));
    assert_eq!(h.sub(&k).add_const(1), c(1).add(&h).sub(&k));
    assert_eq!(cc.mul(&h).mul(&w), w.mul(&cc).mul(&h));
    assert_eq!(c(2).mul(&n.add_const(1)), c(2).mul(&n).add_const(2));
    assert_eq!(n.sub(&n), Dim::zero());
    assert_eq!(n.add_const(1).mul(&n.add_const(-1)), n.mul(&n).add_const(-1));
    assert_eq!(n.neg().neg(), n);
    assert_eq!(Dim::default(), Dim::zero());
    assert_ne!(n, named("M"));

    let set: BTreeSet<Dim> = [h.add(&k), k.add(&h), h.sub(&k)].into_iter().collect();
    assert_eq!(set.len(), 2);
    let hashed: std::collections::HashSet<Dim> = [cc.mul(&h), h.mul(&cc)].into_iter().collect();
    assert_eq!(hashed.len(), 1);
}

#[test]
fn constants_fold() {
    assert_eq!(c(2).add(&c(3)), c(5));
    assert_eq!(c(2).sub(&c(3)), c(-1));
    assert_eq!(c(-4).mul(&c(3)), c(-12));
    assert_eq!(c(7).neg(), c(-7));
    assert_eq!(c(7).add_const(-7), Dim::zero());
    assert_eq!(Dim::zero().as_constant(), Some(0));
    assert_eq!(Dim::one().as_constant(), Some(1));
    assert_eq!(named("N").as_constant(), None);
    assert_eq!(named("N").mul(&Dim::zero()), Dim::zero());
    assert_eq!(named("N").mul(&Dim::one()), named("N"));
}

#[test]
fn floor_div_folds_constants() {
    let cases =
        [(7, 2, 3), (-3, 2, -2), (3, -2, -2), (-3, -2, 1), (-4, 2, -2), (0, 5, 0), (9, 3, 3), (i64::MIN, 1, i64::MIN)];
    for (a, b, q) in cases {
        assert_eq!(c(a).floor_div(&c(b)), Some(c(q)), "{a} / {b}");
    }
    assert_eq!(c(5).floor_div(&Dim::zero()), None);
    assert_eq!(named("N").floor_div(&Dim::zero()), None);
    assert_eq!(c(i64::MIN).floor_div(&c(-1)), None);
}

#[test]
fn floor_div_by_constants_normalizes() {
    let (n, h, kh) = (named("N"), named("H"), named("KH"));
    let two_n = c(2).mul(&n);
    assert_eq!(div(&two_n.add_const(4), &c(2)), n.add_const(2));
    assert_eq!(div(&two_n.add_const(3), &c(2)), n.add_const(1));
    assert_eq!(div(&two_n.add_const(4), &c(-2)), n.neg().add_const(-2));
    assert_eq!(div(&two_n.neg().add_const(-3), &c(2)), n.neg().add_const(-2));
    assert_eq!(div(&n, &c(1)), n);
    assert_eq!(div(&n, &c(-1)), n.neg());
    assert_eq!(div(&div(&n, &c(2)), &c(3)), div(&n, &c(6)));
    // Whole multiples of the divisor leave the numerator.
    assert_eq!(div(&h.add_const(-2), &c(2)).add_const(1), div(&h, &c(2)));
    assert_eq!(div(&h.add_const(-3), &c(2)).add_const(1), div(&h.add_const(-1), &c(2)));
    check_display(&div(&h.add_const(-3), &c(2)).add_const(1), expect![["(H + 1) / 2 - 1"]]);
    check_display(&div(&h.sub(&kh), &c(2)).add_const(1), expect![["(H - KH) / 2 + 1"]]);
    check_display(&div(&n.neg(), &c(2)), expect![["(-N) / 2"]]);
    check_display(&div(&n, &named("M")), expect![["N / M"]]);
    check_display(&div(&n, &c(2).mul(&named("M"))), expect![["N / (2 * M)"]]);
}

#[test]
fn min_max_fold() {
    let (n, m, k) = (named("N"), named("M"), named("K"));
    assert_eq!(min(&c(3), &c(5)), c(3));
    assert_eq!(max(&c(3), &c(5)), c(5));
    assert_eq!(min(&n, &n.add_const(1)), n);
    assert_eq!(max(&n, &n.add_const(1)), n.add_const(1));
    assert_eq!(min(&n, &n), n);
    // Variables are non-negative.
    assert_eq!(min(&n, &Dim::zero()), Dim::zero());
    assert_eq!(max(&n, &Dim::zero()), n);
    assert_eq!(max(&n, &n.add(&m)), n.add(&m));
    assert_eq!(min(&n, &m), min(&m, &n));
    assert_eq!(min(&n, &min(&m, &n)), min(&n, &m));
    assert_eq!(min(&min(&n, &m), &k), min(&n, &min(&m, &k)));
    assert_eq!(max(&max(&n, &m), &k), max(&max(&k, &n), &m));
    // `min(N, M) <= N + M`, so the sum drops out.
    assert_eq!(min(&min(&n, &m), &n.add(&m)), min(&n, &m));
    assert_ne!(min(&n, &m), max(&n, &m));
    check_display(&min(&n.add_const(-1), &m), expect![["min(N - 1, M)"]]);
    check_display(&min(&n, &min(&m, &k)), expect![["min(N, min(M, K))"]]);
    check_display(&max(&n, &m).add_const(1), expect![["max(N, M) + 1"]]);
}

#[test]
fn prove_le_polynomials() {
    use Truth::*;
    let (n, m, h, kh) = (named("N"), named("M"), named("H"), named("KH"));
    check_lt(&n.add_const(-1), &n, True);
    check_le(&n, &n.add(&m), True);
    check_le(&n, &m, Unknown);
    check_le(&n.add_const(1), &n, False);
    // Only `KH >= 1` would make this true, and variables are merely `>= 0`.
    check_le(&h.sub(&kh).add_const(1), &h, Unknown);
    check_le(&Dim::zero(), &n.mul(&m), True);
    check_le(&Dim::zero(), &n.sub(&m), Unknown);
    check_le(&n.mul(&n).add_const(1), &Dim::zero(), False);
    check_lt(&n, &n, False);
    check_le(&n, &n, True);
    check_le(&c(3), &c(2), False);
    assert_eq!(n.prove_eq(&n), True);
    assert_eq!(n.prove_eq(&n.add_const(2)), False);
    assert_eq!(n.prove_eq(&m), Unknown);
    assert!(n.prove_le(&n).is_true());
}

#[test]
fn prove_le_min_max() {
    use Truth::*;
    let (n, m) = (named("N"), named("M"));
    check_le(&min(&n, &m), &n, True);
    check_le(&n, &max(&n, &m), True);
    check_le(&min(&n, &m), &max(&n, &m), True);
    check_le(&c(1), &max(&n, &c(1)), True);
    check_le(&max(&n, &c(5)), &c(4), False);
    check_le(&min(&n, &m), &c(0), Unknown);
    check_lt(&min(&n, &m), &n.add_const(1), True);
    assert_eq!(min(&n, &m).prove_eq(&min(&n, &m).add_const(1)), False);
}

#[test]
fn prove_le_floor_division() {
    use Truth::*;
    let (n, s) = (named("N"), named("S"));
    let half = div(&n, &c(2));
    check_le(&half, &n, True);
    check_le(&div(&n.add_const(1), &c(2)), &n, True);
    check_le(&c(2).mul(&half), &n, True);
    check_le(&n.add_const(-1), &c(2).mul(&half), True);
    check_le(&n, &c(2).mul(&half), Unknown);
    // A strided window: the last start `2 * ((N - 2) / 2)` plus the window
    // of 2 stays inside `N`.
    let last = c(2).mul(&div(&n.add_const(-2), &c(2)));
    check_le(&last.add_const(2), &n, True);
    check_le(&div(&n.add_const(-2), &c(2)).add_const(1), &n, True);
    // A symbolic divisor that is provably positive.
    check_le(&div(&n, &s.add_const(1)), &n, True);
    // A divisor that may be zero says nothing.
    check_le(&div(&n, &s), &n, Unknown);
    check_le(&c(0), &div(&n, &s.add_const(1)), True);
    check_le(&c(0), &div(&n.add_const(-2), &c(2)), Unknown);
}

#[test]
fn display_reads_like_source() {
    let (n, m, cc, h, w, kh) = (named("N"), named("M"), named("C"), named("H"), named("W"), named("KH"));
    check_display(&h.sub(&kh).add_const(1), expect![["H - KH + 1"]]);
    check_display(&w.mul(&h).mul(&cc), expect![["C * H * W"]]);
    check_display(&c(2).mul(&n), expect![["2 * N"]]);
    check_display(&n.neg().add_const(3), expect![["3 - N"]]);
    check_display(&n.neg().add_const(-3), expect![["-N - 3"]]);
    check_display(&m.sub(&n).add_const(-1), expect![["M - N - 1"]]);
    check_display(&n.neg().sub(&c(2).mul(&m)), expect![["-N - 2 * M"]]);
    check_display(&n.mul(&n), expect![["N ** 2"]]);
    check_display(&c(2).mul(&n).mul(&n).mul(&m), expect![["2 * N ** 2 * M"]]);
    check_display(&div(&n, &c(2)).neg(), expect![["-(N / 2)"]]);
    check_display(&m.sub(&div(&n, &c(2))), expect![["M - N / 2"]]);
    check_display(&c(3).mul(&div(&n, &c(2))), expect![["3 * (N / 2)"]]);
    check_display(&div(&n, &c(2)).mul(&div(&n, &c(2))), expect![["(N / 2) ** 2"]]);
    check_display(&Dim::zero(), expect![["0"]]);
    check_display(&c(-5), expect![["-5"]]);
    assert_eq!(h.sub(&kh).add_const(1).to_string(), "d3 - d5 + 1");
    assert_eq!(format!("{:?}", n.add_const(1)), "Dim(d0 + 1)");
}

#[test]
fn vars_affine_and_substitution() {
    let (n, m, k) = (named("N"), named("M"), named("K"));
    assert_eq!(n.as_var(), Some(DimVar(0)));
    assert_eq!(c(2).mul(&n).as_var(), None);
    assert_eq!(n.add_const(1).as_var(), None);
    assert_eq!(min(&n, &m).as_var(), None);
    let d = n.add(&div(&m, &k.add_const(1)));
    assert_eq!(d.vars(), [DimVar(0), DimVar(1), DimVar(6)].into_iter().collect());
    assert!(n.sub(&m).add_const(4).is_affine());
    assert!(!n.mul(&m).is_affine());
    assert!(!div(&n, &c(2)).is_affine());
    assert!(!min(&n, &m).is_affine());
    // The coefficient of one variable, and what is left without it.
    let (nv, mv) = (DimVar(0), DimVar(1));
    assert_eq!(c(3).mul(&n).sub(&m).add_const(2).linear_in(nv), Some((3, c(2).sub(&m))));
    assert_eq!(m.mul(&k).add_const(-1).linear_in(nv), Some((0, m.mul(&k).add_const(-1))));
    assert_eq!(n.mul(&m).add(&n).linear_in(nv), None);
    assert_eq!(n.mul(&n).linear_in(nv), None);
    assert_eq!(n.add(&min(&n, &m)).linear_in(nv), None);
    assert_eq!(n.add(&min(&n, &m)).linear_in(mv), None);
    assert_eq!(n.add(&div(&m, &c(2))).linear_in(nv), Some((1, div(&m, &c(2)))));
    // Substituting constants folds divisions and extrema.
    let folded = d.substitute(&|v| match v.0 {
        0 => Some(c(1)),
        1 => Some(c(7)),
        6 => Some(c(2)),
        _ => None,
    });
    assert_eq!(folded, c(3));
    // Substituting dimensions renormalizes.
    let renamed = n.mul(&m).add(&n).substitute(&|v| (v.0 == 1).then(|| n.add_const(-1)));
    assert_eq!(renamed, n.mul(&n));
    assert_eq!(min(&n, &m).substitute(&|v| (v.0 == 1).then(|| n.add_const(1))), n);
    // A divisor that becomes zero stays an atom and fails to evaluate.
    let by_zero = div(&n, &m).substitute(&|v| (v.0 == 1).then(Dim::zero));
    assert_eq!(by_zero.eval(&|_| Some(1)), None);
    assert_eq!(n.eval(&|_| None), None);
    assert_eq!(c(4).eval(&|_| None), Some(4));
}

#[test]
fn overflow_keeps_values_exact() {
    let n = named("N");
    let big = c(i64::MAX).mul(&n);
    let sum = big.add(&n);
    assert_eq!(sum.eval(&|_| Some(0)), Some(0));
    assert_eq!(sum.eval(&|_| Some(1)), None);
    check_display(&sum, expect![["(N + 9223372036854775807 * N)"]]);
    assert_eq!(sum.prove_le(&n), Truth::Unknown);
    let min_coef = c(i64::MIN).mul(&n);
    assert_eq!(min_coef.neg().eval(&|_| Some(0)), Some(0));
    check_display(&min_coef, expect![["-9223372036854775808 * N"]]);
    assert_eq!(min_coef.floor_div(&c(-1)), None);
    let square = big.mul(&big);
    assert_eq!(square.eval(&|_| Some(0)), Some(0));
    assert_eq!(c(i64::MAX).add_const(1).eval(&|_| None), None);
    assert_eq!(big.sub(&min_coef).eval(&|_| Some(0)), Some(0));
    // Floor division near `i64::MIN` stays exact.
    let near_min = n.add_const(i64::MIN);
    let q = div(&near_min, &c(3));
    assert_eq!(q.eval(&|_| Some(0)), Some(i64::MIN.div_euclid(3)));
}

/// A tiny deterministic generator (Knuth's MMIX LCG) so that the randomized
/// tests need no dependencies and never flake.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }

    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
}

/// An unnormalized expression, evaluated directly as the reference.
#[derive(Debug)]
enum Tree {
    Const(i64),
    Var(u32),
    Add(Box<Tree>, Box<Tree>),
    Sub(Box<Tree>, Box<Tree>),
    Mul(Box<Tree>, Box<Tree>),
    Neg(Box<Tree>),
    Div(Box<Tree>, Box<Tree>),
    Min(Box<Tree>, Box<Tree>),
    Max(Box<Tree>, Box<Tree>),
}

const VARS: u32 = 3;

impl Tree {
    fn random(rng: &mut Lcg, depth: u32) -> Tree {
        let leaf = depth == 0 || rng.below(4) == 0;
        if leaf {
            return if rng.below(2) == 0 {
                Tree::Const(rng.range(-3, 3))
            } else {
                Tree::Var(rng.below(VARS as u64) as u32)
            };
        }
        let mut sub = || Box::new(Tree::random(rng, depth - 1));
        let (a, b) = (sub(), sub());
        match rng.below(8) {
            0 => Tree::Add(a, b),
            1 => Tree::Sub(a, b),
            2 => Tree::Mul(a, b),
            3 => Tree::Neg(a),
            4 => Tree::Div(a, b),
            5 => Tree::Min(a, b),
            6 => Tree::Max(a, b),
            // Divisions by small constants, the common case in shapes.
            _ => Tree::Div(a, Box::new(Tree::Const(rng.range(-3, 3)))),
        }
    }

    fn eval(&self, env: &[i64]) -> Option<i64> {
        Some(match self {
            Tree::Const(k) => *k,
            Tree::Var(v) => *env.get(*v as usize)?,
            Tree::Add(a, b) => a.eval(env)?.checked_add(b.eval(env)?)?,
            Tree::Sub(a, b) => a.eval(env)?.checked_sub(b.eval(env)?)?,
            Tree::Mul(a, b) => a.eval(env)?.checked_mul(b.eval(env)?)?,
            Tree::Neg(a) => a.eval(env)?.checked_neg()?,
            Tree::Div(a, b) => {
                let (a, b) = (a.eval(env)?, b.eval(env)?);
                // Floor division from Euclidean division: they agree for
                // positive divisors, and `a / b == -a / -b`.
                if b > 0 {
                    a.checked_div_euclid(b)?
                } else {
                    a.checked_neg()?.checked_div_euclid(b.checked_neg()?)?
                }
            }
            Tree::Min(a, b) => a.eval(env)?.min(b.eval(env)?),
            Tree::Max(a, b) => a.eval(env)?.max(b.eval(env)?),
        })
    }

    /// The tree through the `Dim` API; `None` if a division is refused.
    fn build(&self) -> Option<Dim> {
        Some(match self {
            Tree::Const(k) => c(*k),
            Tree::Var(v) => Dim::var(DimVar(*v)),
            Tree::Add(a, b) => a.build()?.add(&b.build()?),
            Tree::Sub(a, b) => a.build()?.sub(&b.build()?),
            Tree::Mul(a, b) => a.build()?.mul(&b.build()?),
            Tree::Neg(a) => a.build()?.neg(),
            Tree::Div(a, b) => a.build()?.floor_div(&b.build()?)?,
            Tree::Min(a, b) => min(&a.build()?, &b.build()?),
            Tree::Max(a, b) => max(&a.build()?, &b.build()?),
        })
    }
}

/// Every assignment of `0..=max` to the variables.
fn grid(max: i64) -> Vec<[i64; VARS as usize]> {
    let mut out = Vec::new();
    for a in 0..=max {
        for b in 0..=max {
            for c in 0..=max {
                out.push([a, b, c]);
            }
        }
    }
    out
}

fn eval_at(d: &Dim, env: &[i64]) -> Option<i64> {
    d.eval(&|v| env.get(v.0 as usize).copied())
}

#[test]
fn eval_of_normal_form_matches_tree() {
    let mut rng = Lcg(1);
    let points = grid(4);
    let mut built = 0;
    for _ in 0..1500 {
        let tree = Tree::random(&mut rng, 3);
        let Some(dim) = tree.build() else { continue };
        built += 1;
        assert_normal(&dim);
        assert_eq!(dim.substitute(&|_| None), dim, "substitution is not idempotent on {dim}");
        // Rendering never fails, and the terms back ends spell from are
        // the normal form's.
        let _ = dim.to_string();
        assert_eq!(dim.terms().len(), dim.terms.len(), "{dim}");
        for env in &points {
            let Some(expected) = tree.eval(env) else { continue };
            assert_eq!(eval_at(&dim, env), Some(expected), "{tree:?} normalized to {dim} at {env:?}");
            let folded = dim.substitute(&|v| env.get(v.0 as usize).map(|&x| c(x)));
            assert_eq!(folded.as_constant(), Some(expected), "{dim} substituted at {env:?}");
        }
    }
    assert!(built > 1000, "too few trees built: {built}");
}

#[test]
fn substituting_dims_commutes_with_eval() {
    let mut rng = Lcg(2);
    for _ in 0..300 {
        let Some(dim) = Tree::random(&mut rng, 3).build() else { continue };
        let Some(replacement) = Tree::random(&mut rng, 2).build() else { continue };
        let substituted = dim.substitute(&|v| (v.0 == 0).then(|| replacement.clone()));
        for env in grid(3) {
            let Some(r) = eval_at(&replacement, &env) else { continue };
            // Variables are non-negative; skip assignments outside the domain.
            if r < 0 {
                continue;
            }
            let mut inner = env;
            inner[0] = r;
            if let Some(expected) = eval_at(&dim, &inner) {
                assert_eq!(eval_at(&substituted, &env), Some(expected), "{dim}[d0 := {replacement}] at {env:?}");
            }
        }
    }
}

/// Checks one prover answer against every assignment of the grid.
fn assert_sound(answer: Truth, holds: impl Fn(i64, i64) -> bool, a: &Dim, b: &Dim, what: &str) {
    if answer == Truth::Unknown {
        return;
    }
    for env in grid(6) {
        let (Some(x), Some(y)) = (eval_at(a, &env), eval_at(b, &env)) else { continue };
        assert_eq!(
            holds(x, y),
            answer == Truth::True,
            "{a} {what} {b} answered {answer:?}, but at {env:?}: {x} vs {y}"
        );
    }
}

#[test]
fn prover_is_sound() {
    let mut rng = Lcg(3);
    let mut decided = 0;
    let mut pairs = 0;
    while pairs < 400 {
        let Some(a) = Tree::random(&mut rng, 2).build() else { continue };
        let Some(other) = Tree::random(&mut rng, 2).build() else { continue };
        // Relate the two sides often enough for the prover to have a chance.
        let b = match rng.below(6) {
            0 => other,
            1 => a.add(&other.mul(&other)),
            2 => min(&a, &other),
            3 => max(&a, &other).add_const(rng.range(-1, 1)),
            4 => match a.floor_div(&c(rng.range(1, 3))) {
                Some(q) => q.add(&other),
                None => continue,
            },
            _ => a.add_const(rng.range(-2, 2)),
        };
        pairs += 1;
        let answers = [(a.prove_le(&b), "<="), (a.prove_lt(&b), "<"), (a.prove_eq(&b), "==")];
        for (answer, what) in answers {
            if answer != Truth::Unknown {
                decided += 1;
            }
            let holds = match what {
                "<=" => |x: i64, y: i64| x <= y,
                "<" => |x: i64, y: i64| x < y,
                _ => |x: i64, y: i64| x == y,
            };
            assert_sound(answer, holds, &a, &b, what);
        }
    }
    assert!(decided > 300, "the prover decided only {decided} queries");
}
