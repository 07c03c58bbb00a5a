//! Symbolic dimensions: a small algebra of integer expressions over dimension
//! variables, normalized so that equality is a structural comparison.
//!
//! A [`Dim`] is a polynomial with `i64` coefficients whose "variables" are
//! *atoms*: dimension variables ([`DimVar`], which denote non-negative
//! integers) and the few non-polynomial operations shapes need (floor
//! division, `min`, `max`). Every constructor returns the normal form below,
//! so `(H - K) + 1`, `1 + H - K` and `H + 1 - K` are the same value, and
//! `==`, `Hash` and `Ord` (all derived) agree with it.
//!
//! # Normal form
//!
//! - A `Dim` maps monomials to coefficients. No coefficient is zero; the
//!   constant term is the empty monomial; zero is the empty map.
//! - A monomial is a list of `(atom, power)` factors sorted by atom, with no
//!   atom repeated and every power at least 1.
//! - `Var(v)` is a dimension variable.
//! - `FloorDiv(n, d)` is `⌊n / d⌋`. When `d` is a constant it is at least 2
//!   (dividing by 1 folds away and a negative constant divisor is moved into
//!   the numerator), `n` is not constant, not every non-constant coefficient
//!   of `n` is a multiple of `d` (otherwise the division folds), the constant
//!   term of `n` lies in `0..d` (whole multiples of `d` are pulled out, so
//!   `(H - 2) / 2 + 1` and `H / 2` are one value; skipped only where that
//!   would overflow near `i64::MIN`), and `n` is not itself a floor division
//!   by a constant (`(a / b) / c` is `a / (b * c)`). A symbolic divisor is
//!   kept as is; the algebra never folds it, and code generation assumes the
//!   caller has checked that it is positive. The one exception to all of
//!   this is [`Dim::substitute`], which keeps `n / d` unfolded when the
//!   substituted divisor is `0` or the fold would overflow.
//! - `Min(ops)` / `Max(ops)` have at least two operands, sorted and without
//!   duplicates; no operand is itself a `Min` (resp. `Max`), so `min` is
//!   flattened and commutative; and no operand is provably (by
//!   [`Dim::prove_le`]) at most (resp. at least) another, so `min(N, N + 1)`
//!   is `N`.
//! - `Sum(a, b)` / `Product(a, b)` (operands sorted) appear only where
//!   folding `a + b` or `a * b` would overflow an `i64` coefficient. Rather
//!   than saturate, which would silently change the value (and make proofs
//!   unsound), the operation is kept unevaluated: such values are exact but
//!   no longer canonical, [`Dim::eval`] computes them with checked
//!   arithmetic, and the prover treats them as opaque.
//!
//! For expressions whose only atoms are variables the normal form is unique:
//! two polynomials that agree on every non-negative input have equal
//! coefficients, so structural equality is semantic equality. With
//! `FloorDiv`/`Min`/`Max` atoms structurally equal values are still equal
//! numbers, but equal numbers may differ structurally (`(H - 3) / 2 + 1` and
//! `(H - 1) / 2`); [`Dim::prove_eq`] tries harder than `==`.
//!
//! Nothing here panics: coefficient arithmetic is checked, evaluation returns
//! `None` on overflow or division by zero, and the prover runs on a fixed
//! budget of steps.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};

/// A dimension variable: an opaque id that the caller maps to a symbol (a
/// dimension name like `N` or a scalar `i64` parameter). Variables denote
/// non-negative integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DimVar(pub u32);

/// A normalized symbolic integer expression; see the module documentation
/// for the normal form.
///
/// Equality is structural and, for polynomials, semantic:
/// `(H - K) + 1 == 1 + H - K`, `C * H * W == W * C * H`,
/// `2 * (N + 1) == 2 * N + 2`.
///
/// `Ord` is derived (a structural order, so `Dim` can key ordered maps), which
/// means `a.min(b)` on an owned `a` resolves to `Ord::min` (and `a.min(&b)`
/// fails to type-check). Write `Dim::min(&a, &b)`, or `a.min(&b)` where `a`
/// is a `&Dim`, for the symbolic minimum; likewise for `max`.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Dim {
    terms: BTreeMap<Monomial, i64>,
}

/// A product of atoms raised to positive powers, sorted by atom.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Monomial(Vec<(Atom, u32)>);

/// The indivisible factors of a monomial.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Atom {
    Var(DimVar),
    FloorDiv(Box<Dim>, Box<Dim>),
    Min(Vec<Dim>),
    Max(Vec<Dim>),
    /// `a + b`, kept unevaluated because folding it overflows `i64`.
    Sum(Box<Dim>, Box<Dim>),
    /// `a * b`, kept unevaluated because folding it overflows `i64`.
    Product(Box<Dim>, Box<Dim>),
}

/// The answer of a decision procedure that may not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Truth {
    True,
    False,
    Unknown,
}

impl Truth {
    /// Whether the property was proven.
    pub fn is_true(self) -> bool {
        self == Truth::True
    }
}

/// Which extremum a `Min`/`Max` atom takes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Extremum {
    Min,
    Max,
}

/// How many non-trivial non-negativity goals one proof may try. The prover
/// splits on `min`/`max`/division atoms, which can branch; a fixed budget
/// keeps every query cheap and makes "Unknown" the answer when it runs out.
const PROOF_FUEL: u32 = 256;

impl Dim {
    /// The constant `c`.
    pub fn constant(c: i64) -> Dim {
        let mut terms = BTreeMap::new();
        if c != 0 {
            terms.insert(Monomial::one(), c);
        }
        Dim { terms }
    }

    /// The variable `v`.
    pub fn var(v: DimVar) -> Dim {
        Dim::from_atom(Atom::Var(v))
    }

    /// The constant 0.
    pub fn zero() -> Dim {
        Dim::default()
    }

    /// The constant 1.
    pub fn one() -> Dim {
        Dim::constant(1)
    }

    /// `self + o`.
    pub fn add(&self, o: &Dim) -> Dim {
        self.checked_add_scaled(o, 1).unwrap_or_else(|| Dim::unfolded(Atom::Sum, self, o))
    }

    /// `self - o`.
    pub fn sub(&self, o: &Dim) -> Dim {
        self.checked_add_scaled(o, -1).unwrap_or_else(|| Dim::unfolded(Atom::Sum, self, &o.neg()))
    }

    /// `self * o`.
    pub fn mul(&self, o: &Dim) -> Dim {
        self.checked_mul(o).unwrap_or_else(|| Dim::unfolded(Atom::Product, self, o))
    }

    /// `-self`.
    pub fn neg(&self) -> Dim {
        self.checked_neg().unwrap_or_else(|| Dim::unfolded(Atom::Product, &Dim::constant(-1), self))
    }

    /// `self + c`.
    pub fn add_const(&self, c: i64) -> Dim {
        self.add(&Dim::constant(c))
    }

    /// Floor division `⌊self / o⌋` (rounds toward negative infinity).
    ///
    /// By a constant divisor it folds constants (`-3 / 2 == -2`), divides
    /// exactly when every non-constant coefficient is a multiple of the
    /// divisor (`(2 * N + 4) / 2 == N + 2`, `(2 * N + 3) / 2 == N + 1`),
    /// pulls whole multiples of the divisor out of the constant term
    /// (`(H - 3) / 2 == (H + 1) / 2 - 2`) and merges nested divisions
    /// (`(N / 2) / 3 == N / 6`). Any other quotient is an atom.
    ///
    /// Returns `None` when the divisor is the constant 0, or when the
    /// quotient is not representable without `i64` overflow (such as
    /// `i64::MIN / -1`).
    pub fn floor_div(&self, o: &Dim) -> Option<Dim> {
        match o.as_constant() {
            Some(0) => None,
            // ⌊a / c⌋ == ⌊-a / -c⌋: keep constant divisors positive so that
            // the generated `div_euclid` (floor division for positive
            // divisors) is right for every constant divisor.
            Some(c) if c < 0 => self.checked_neg()?.floor_div_by(c.checked_neg()?),
            Some(c) => self.floor_div_by(c),
            None => Some(Dim::from_atom(Atom::FloorDiv(Box::new(self.clone()), Box::new(o.clone())))),
        }
    }

    /// The minimum of `self` and `o`: folded when one is provably at most the
    /// other (always so when they differ by a constant), otherwise an atom.
    pub fn min(&self, o: &Dim) -> Dim {
        Dim::extremum(Extremum::Min, vec![self.clone(), o.clone()])
    }

    /// The maximum of `self` and `o`: folded when one is provably at least the
    /// other (always so when they differ by a constant), otherwise an atom.
    pub fn max(&self, o: &Dim) -> Dim {
        Dim::extremum(Extremum::Max, vec![self.clone(), o.clone()])
    }

    /// The value, if `self` is a constant.
    pub fn as_constant(&self) -> Option<i64> {
        let mut terms = self.terms.iter();
        match (terms.next(), terms.next()) {
            (None, _) => Some(0),
            (Some((m, &c)), None) if m.is_one() => Some(c),
            _ => None,
        }
    }

    /// The variable, if `self` is exactly one variable (coefficient 1, no
    /// other terms).
    pub fn as_var(&self) -> Option<DimVar> {
        match self.as_atom()? {
            Atom::Var(v) => Some(*v),
            _ => None,
        }
    }

    /// Every variable in `self`, including those inside atoms.
    pub fn vars(&self) -> BTreeSet<DimVar> {
        let mut out = BTreeSet::new();
        self.collect_vars(&mut out);
        out
    }

    /// Whether `self` is affine: a constant plus integer multiples of
    /// variables (degree at most 1, no `min`/`max`/division atoms).
    pub fn is_affine(&self) -> bool {
        self.terms.keys().all(|m| matches!(m.0.as_slice(), [] | [(Atom::Var(_), 1)]))
    }

    /// `self` as `c * v + rest` with an integer `c` and `rest` free of `v`
    /// (inside its atoms too): `None` when `v` is multiplied by anything
    /// but a constant, raised to a power, or inside a `min`, `max` or
    /// division.
    pub fn linear_in(&self, v: DimVar) -> Option<(i64, Dim)> {
        let (q, rest) = self.split_linear(&Atom::Var(v))?;
        let c = q.as_constant()?;
        (!rest.vars().contains(&v)).then_some((c, rest))
    }

    /// Replaces the variables for which `f` returns a value and renormalizes,
    /// so substituting constants folds divisions and `min`/`max`.
    ///
    /// A division whose substituted divisor becomes the constant 0 (or whose
    /// fold would overflow) stays an unfolded atom; [`Dim::eval`] then
    /// answers `None` for it.
    pub fn substitute(&self, f: &dyn Fn(DimVar) -> Option<Dim>) -> Dim {
        let mut acc = Dim::zero();
        for (m, &c) in &self.terms {
            let mut term = Dim::constant(c);
            for (atom, pow) in &m.0 {
                term = term.mul(&atom.substitute(f).pow(*pow));
            }
            acc = acc.add(&term);
        }
        acc
    }

    /// Evaluates `self` with every variable given by `env`.
    ///
    /// `None` when a variable is missing, a divisor is zero, or a step
    /// overflows `i64` (the terms are summed in normal-form order, so an
    /// intermediate overflow is reported even where a different order would
    /// have avoided it).
    pub fn eval(&self, env: &dyn Fn(DimVar) -> Option<i64>) -> Option<i64> {
        let mut acc: i64 = 0;
        for (m, &c) in &self.terms {
            let mut term = c;
            for (atom, pow) in &m.0 {
                term = term.checked_mul(atom.eval(env)?.checked_pow(*pow)?)?;
            }
            acc = acc.checked_add(term)?;
        }
        Some(acc)
    }

    /// Decides `self <= other` for every value of the variables (all of them
    /// non-negative).
    ///
    /// Sound, not complete: `True` only if it holds for every assignment,
    /// `False` only if it fails for every assignment (`self > other`
    /// everywhere), `Unknown` otherwise. So `N - 1 <= N` is `True`, `N + 1 <=
    /// N` is `False`, and `N <= M` and `H - KH + 1 <= H` are `Unknown` (the
    /// latter fails for `KH = 0`).
    ///
    /// The difference `other - self` is shown non-negative term by term (a
    /// non-negative coefficient times a monomial of non-negative atoms), or
    /// after eliminating a `min`/`max` atom (by its operands) or a floor
    /// division (by `b * ⌊a / b⌋ ∈ [a - b + 1, a]`) from a position where the
    /// difference is monotone in it.
    pub fn prove_le(&self, other: &Dim) -> Truth {
        if Prover::new().nonneg(&other.sub(self)) {
            Truth::True
        } else if Prover::new().nonneg(&self.sub(other).add_const(-1)) {
            // Integers: `self - other - 1 >= 0` means `self > other`.
            Truth::False
        } else {
            Truth::Unknown
        }
    }

    /// Decides `self < other` like [`Dim::prove_le`] (as `self + 1 <= other`).
    pub fn prove_lt(&self, other: &Dim) -> Truth {
        self.add_const(1).prove_le(other)
    }

    /// Decides `self == other`: `True` when structurally equal or provably
    /// `<=` both ways, `False` when one is provably less than the other (in
    /// particular when they differ by a non-zero constant), else `Unknown`.
    pub fn prove_eq(&self, other: &Dim) -> Truth {
        if self == other {
            return Truth::True;
        }
        match (self.prove_le(other), other.prove_le(self)) {
            (Truth::True, Truth::True) => Truth::True,
            (Truth::False, _) | (_, Truth::False) => Truth::False,
            _ => Truth::Unknown,
        }
    }

    /// Human-readable text as a user would write it, with `names` naming the
    /// variables: `H - KH + 1`, `C * H * W`, `2 * N`, `(H + 1) / 2 - 1`,
    /// `min(N, M)`, `3 - N`, `N ** 2`.
    ///
    /// Terms with positive coefficients come first, then negative ones, then
    /// the constant (which leads instead when every other term is negative);
    /// otherwise terms keep the normal-form order (by variable id).
    pub fn display(&self, names: &dyn Fn(DimVar) -> String) -> String {
        let mut out = String::new();
        self.write_sum(&mut out, names);
        out
    }
}

// Arithmetic on the normal form.
impl Dim {
    fn from_atom(atom: Atom) -> Dim {
        let mut terms = BTreeMap::new();
        terms.insert(Monomial(vec![(atom, 1)]), 1);
        Dim { terms }
    }

    /// The atom, if `self` is exactly one atom with coefficient 1.
    fn as_atom(&self) -> Option<&Atom> {
        let mut terms = self.terms.iter();
        match (terms.next(), terms.next()) {
            (Some((Monomial(factors), 1)), None) => match factors.as_slice() {
                [(atom, 1)] => Some(atom),
                _ => None,
            },
            _ => None,
        }
    }

    /// An unevaluated binary operation with its (commutative) operands sorted.
    fn unfolded(op: fn(Box<Dim>, Box<Dim>) -> Atom, a: &Dim, b: &Dim) -> Dim {
        let (a, b) = if a <= b { (a, b) } else { (b, a) };
        Dim::from_atom(op(Box::new(a.clone()), Box::new(b.clone())))
    }

    fn constant_term(&self) -> i64 {
        self.terms.get(&Monomial::one()).copied().unwrap_or(0)
    }

    /// `self + k * o`, or `None` on overflow.
    fn checked_add_scaled(&self, o: &Dim, k: i64) -> Option<Dim> {
        let mut terms = self.terms.clone();
        for (m, &c) in &o.terms {
            add_term(&mut terms, m.clone(), c.checked_mul(k)?)?;
        }
        Some(Dim { terms })
    }

    fn checked_mul(&self, o: &Dim) -> Option<Dim> {
        let mut terms = BTreeMap::new();
        for (m1, &c1) in &self.terms {
            for (m2, &c2) in &o.terms {
                add_term(&mut terms, m1.mul(m2)?, c1.checked_mul(c2)?)?;
            }
        }
        Some(Dim { terms })
    }

    fn checked_neg(&self) -> Option<Dim> {
        let mut terms = BTreeMap::new();
        for (m, &c) in &self.terms {
            terms.insert(m.clone(), c.checked_neg()?);
        }
        Some(Dim { terms })
    }

    /// `self ** k` by repeated squaring.
    fn pow(&self, mut k: u32) -> Dim {
        let mut base = self.clone();
        let mut acc = Dim::one();
        while k > 0 {
            if k & 1 == 1 {
                acc = acc.mul(&base);
            }
            k >>= 1;
            if k > 0 {
                base = base.mul(&base);
            }
        }
        acc
    }

    /// `⌊self / c⌋` for a positive constant `c`.
    fn floor_div_by(&self, c: i64) -> Option<Dim> {
        if c == 1 {
            return Some(self.clone());
        }
        let k = self.constant_term();
        let q = floor_div_i64(k, c)?;
        let divisible = self.terms.iter().all(|(m, &coef)| m.is_one() || coef.checked_rem(c) == Some(0));
        if divisible {
            // ⌊(c * P + k) / c⌋ == P + ⌊k / c⌋ because P is an integer.
            let mut terms = BTreeMap::new();
            for (m, &coef) in &self.terms {
                if !m.is_one() {
                    terms.insert(m.clone(), coef.checked_div(c)?);
                }
            }
            if q != 0 {
                terms.insert(Monomial::one(), q);
            }
            return Some(Dim { terms });
        }
        // Pull whole multiples of `c` out of the constant term:
        // ⌊(n + q * c) / c⌋ == ⌊n / c⌋ + q with the remainder in `0..c`.
        let Some(whole) = q.checked_mul(c).and_then(i64::checked_neg) else {
            // Only near `i64::MIN`: leave the constant where it is.
            return Some(Dim::from_atom(Atom::FloorDiv(Box::new(self.clone()), Box::new(Dim::constant(c)))));
        };
        let numerator = self.add_const(whole);
        let quotient = match numerator.as_atom() {
            // ⌊⌊a / b⌋ / c⌋ == ⌊a / (b * c)⌋ for positive b and c.
            Some(Atom::FloorDiv(a, b)) if b.as_constant().is_some_and(|b| b > 0) => {
                let bc = b.as_constant().and_then(|b| b.checked_mul(c));
                match bc {
                    Some(bc) => a.floor_div_by(bc)?,
                    None => Dim::from_atom(Atom::FloorDiv(Box::new(numerator.clone()), Box::new(Dim::constant(c)))),
                }
            }
            _ => Dim::from_atom(Atom::FloorDiv(Box::new(numerator), Box::new(Dim::constant(c)))),
        };
        Some(quotient.add_const(q))
    }

    /// The folded `min`/`max` of `ops`; see the module documentation for the
    /// invariants of the atom.
    fn extremum(kind: Extremum, ops: Vec<Dim>) -> Dim {
        let dominates = |a: &Dim, b: &Dim| match kind {
            Extremum::Min => a.prove_le(b) == Truth::True,
            Extremum::Max => b.prove_le(a) == Truth::True,
        };
        // Each operand contributes a group: the operands of a nested atom of
        // the same kind (flattening it), or itself. No member of a group
        // dominates another (the atom's invariant), so only pairs across
        // groups need proofs; that keeps `min(min(a, b), c)` linear rather
        // than quadratic in the number of operands. A dropped operand is
        // always dominated by one that stays (directly or through a chain),
        // so the value is unchanged and at least one operand survives.
        let mut kept: Vec<Dim> = Vec::new();
        for op in ops {
            let group = match (kind, op.as_atom()) {
                (Extremum::Min, Some(Atom::Min(inner))) | (Extremum::Max, Some(Atom::Max(inner))) => inner.clone(),
                _ => vec![op],
            };
            let mut earlier = std::mem::take(&mut kept);
            let fresh: Vec<Dim> = group.into_iter().filter(|op| !earlier.iter().any(|k| dominates(k, op))).collect();
            earlier.retain(|k| !fresh.iter().any(|op| dominates(op, k)));
            kept = earlier;
            kept.extend(fresh);
        }
        if kept.len() <= 1 {
            // `kept` is empty only for empty `ops`, which no caller passes;
            // zero keeps this total.
            return kept.pop().unwrap_or_default();
        }
        kept.sort();
        match kind {
            Extremum::Min => Dim::from_atom(Atom::Min(kept)),
            Extremum::Max => Dim::from_atom(Atom::Max(kept)),
        }
    }

    fn collect_vars(&self, out: &mut BTreeSet<DimVar>) {
        for m in self.terms.keys() {
            for (atom, _) in &m.0 {
                match atom {
                    Atom::Var(v) => {
                        out.insert(*v);
                    }
                    Atom::FloorDiv(a, b) | Atom::Sum(a, b) | Atom::Product(a, b) => {
                        a.collect_vars(out);
                        b.collect_vars(out);
                    }
                    Atom::Min(ops) | Atom::Max(ops) => ops.iter().for_each(|op| op.collect_vars(out)),
                }
            }
        }
    }

    /// Splits `self` as `atom * q + r` where neither `q` nor `r` contains
    /// `atom` at the top level; `None` if `atom` occurs with a power above 1.
    fn split_linear(&self, atom: &Atom) -> Option<(Dim, Dim)> {
        let mut q = BTreeMap::new();
        let mut r = BTreeMap::new();
        for (m, &c) in &self.terms {
            match m.0.iter().find(|(a, _)| a == atom) {
                Some((_, 1)) => {
                    let rest = m.0.iter().filter(|(a, _)| a != atom).cloned().collect();
                    // Distinct monomials stay distinct once the same factor is
                    // removed from each, so nothing collides here.
                    q.insert(Monomial(rest), c);
                }
                Some(_) => return None,
                None => {
                    r.insert(m.clone(), c);
                }
            }
        }
        Some((Dim { terms: q }, Dim { terms: r }))
    }
}

/// Adds `c * m` into `terms`, keeping coefficients non-zero; `None` on
/// overflow.
fn add_term(terms: &mut BTreeMap<Monomial, i64>, m: Monomial, c: i64) -> Option<()> {
    match terms.entry(m) {
        Entry::Vacant(e) => {
            if c != 0 {
                e.insert(c);
            }
        }
        Entry::Occupied(mut e) => {
            let sum = e.get().checked_add(c)?;
            if sum == 0 {
                e.remove();
            } else {
                e.insert(sum);
            }
        }
    }
    Some(())
}

/// `⌊a / b⌋`; `None` when `b == 0` or on overflow (`i64::MIN / -1`).
fn floor_div_i64(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    let r = a.checked_rem(b)?;
    // Truncation rounded toward zero; step down when the exact quotient was
    // negative and not an integer.
    if r != 0 && ((r < 0) != (b < 0)) {
        q.checked_sub(1)
    } else {
        Some(q)
    }
}

impl Monomial {
    /// The empty product (the monomial of the constant term).
    fn one() -> Monomial {
        Monomial(Vec::new())
    }

    fn is_one(&self) -> bool {
        self.0.is_empty()
    }

    /// The product of two monomials; `None` if a power overflows `u32`.
    fn mul(&self, o: &Monomial) -> Option<Monomial> {
        let mut factors: BTreeMap<Atom, u32> = BTreeMap::new();
        for (atom, pow) in self.0.iter().chain(&o.0) {
            let p = factors.entry(atom.clone()).or_insert(0);
            *p = p.checked_add(*pow)?;
        }
        Some(Monomial(factors.into_iter().collect()))
    }
}

impl Atom {
    fn substitute(&self, f: &dyn Fn(DimVar) -> Option<Dim>) -> Dim {
        match self {
            Atom::Var(v) => f(*v).unwrap_or_else(|| Dim::var(*v)),
            Atom::FloorDiv(a, b) => {
                let (a, b) = (a.substitute(f), b.substitute(f));
                a.floor_div(&b).unwrap_or_else(|| Dim::from_atom(Atom::FloorDiv(Box::new(a), Box::new(b))))
            }
            Atom::Min(ops) => Dim::extremum(Extremum::Min, ops.iter().map(|op| op.substitute(f)).collect()),
            Atom::Max(ops) => Dim::extremum(Extremum::Max, ops.iter().map(|op| op.substitute(f)).collect()),
            Atom::Sum(a, b) => a.substitute(f).add(&b.substitute(f)),
            Atom::Product(a, b) => a.substitute(f).mul(&b.substitute(f)),
        }
    }

    fn eval(&self, env: &dyn Fn(DimVar) -> Option<i64>) -> Option<i64> {
        match self {
            Atom::Var(v) => env(*v),
            Atom::FloorDiv(a, b) => floor_div_i64(a.eval(env)?, b.eval(env)?),
            Atom::Min(ops) => ops.iter().map(|op| op.eval(env)).try_fold(i64::MAX, |acc, v| Some(acc.min(v?))),
            Atom::Max(ops) => ops.iter().map(|op| op.eval(env)).try_fold(i64::MIN, |acc, v| Some(acc.max(v?))),
            Atom::Sum(a, b) => a.eval(env)?.checked_add(b.eval(env)?),
            Atom::Product(a, b) => a.eval(env)?.checked_mul(b.eval(env)?),
        }
    }
}

/// What the prover knows about the sign of a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sign {
    NonNeg,
    NonPos,
    Unknown,
}

impl Sign {
    fn mul(self, o: Sign) -> Sign {
        match (self, o) {
            (Sign::Unknown, _) | (_, Sign::Unknown) => Sign::Unknown,
            (a, b) if a == b => Sign::NonNeg,
            _ => Sign::NonPos,
        }
    }
}

/// A sound, incomplete prover of `d >= 0` for all non-negative variables.
///
/// Every `true` answer is a proof; `false` means "not proven". The budget
/// bounds the work of one query, including the sign reasoning for atoms.
struct Prover {
    fuel: u32,
}

impl Prover {
    fn new() -> Prover {
        Prover { fuel: PROOF_FUEL }
    }

    fn nonneg(&mut self, d: &Dim) -> bool {
        if let Some(c) = d.as_constant() {
            return c >= 0;
        }
        if self.fuel == 0 {
            return false;
        }
        self.fuel -= 1;
        self.nonneg_termwise(d) || self.nonneg_by_elimination(d)
    }

    fn sign(&mut self, d: &Dim) -> Sign {
        if self.nonneg(d) {
            Sign::NonNeg
        } else if self.nonneg(&d.neg()) {
            Sign::NonPos
        } else {
            Sign::Unknown
        }
    }

    /// Whether `b >= 1` (a divisor for which floor division is well defined
    /// and has the numerator's sign) or `b <= -1`; `None` if neither is known.
    fn divisor_sign(&mut self, b: &Dim) -> Option<Sign> {
        if self.nonneg(&b.add_const(-1)) {
            Some(Sign::NonNeg)
        } else if self.nonneg(&b.neg().add_const(-1)) {
            Some(Sign::NonPos)
        } else {
            None
        }
    }

    /// Every term is a non-negative coefficient times a non-negative
    /// monomial, or a negative coefficient times a non-positive one.
    fn nonneg_termwise(&mut self, d: &Dim) -> bool {
        for (m, &c) in &d.terms {
            let sign = self.monomial_sign(m);
            let ok = if c > 0 { sign == Sign::NonNeg } else { sign == Sign::NonPos };
            if !ok {
                return false;
            }
        }
        true
    }

    fn monomial_sign(&mut self, m: &Monomial) -> Sign {
        let mut sign = Sign::NonNeg;
        for (atom, pow) in &m.0 {
            // An even power is a square, whatever the sign of its base.
            let factor = if pow % 2 == 0 { Sign::NonNeg } else { self.atom_sign(atom) };
            sign = sign.mul(factor);
            if sign == Sign::Unknown {
                break;
            }
        }
        sign
    }

    fn atom_sign(&mut self, atom: &Atom) -> Sign {
        match atom {
            Atom::Var(_) => Sign::NonNeg,
            Atom::FloorDiv(a, b) => match self.divisor_sign(b) {
                Some(divisor) => self.sign(a).mul(divisor),
                None => Sign::Unknown,
            },
            Atom::Min(ops) => {
                // At most every operand: non-positive if one is, non-negative
                // if all are.
                let mut all_nonneg = true;
                for op in ops {
                    match self.sign(op) {
                        Sign::NonPos => return Sign::NonPos,
                        Sign::NonNeg => {}
                        Sign::Unknown => all_nonneg = false,
                    }
                }
                if all_nonneg {
                    Sign::NonNeg
                } else {
                    Sign::Unknown
                }
            }
            Atom::Max(ops) => {
                let mut all_nonpos = true;
                for op in ops {
                    match self.sign(op) {
                        Sign::NonNeg => return Sign::NonNeg,
                        Sign::NonPos => {}
                        Sign::Unknown => all_nonpos = false,
                    }
                }
                if all_nonpos {
                    Sign::NonPos
                } else {
                    Sign::Unknown
                }
            }
            Atom::Sum(a, b) => match (self.sign(a), self.sign(b)) {
                (Sign::NonNeg, Sign::NonNeg) => Sign::NonNeg,
                (Sign::NonPos, Sign::NonPos) => Sign::NonPos,
                _ => Sign::Unknown,
            },
            Atom::Product(a, b) => self.sign(a).mul(self.sign(b)),
        }
    }

    /// Writes `d = t * q + r` for a `min`/`max`/floor-division atom `t` that
    /// occurs linearly, and, when `q` has a known sign (so `d` is monotone in
    /// `t`), replaces `t` by the bound that minimizes `d`:
    ///
    /// - `min(a_i)` is at most each `a_i` and equal to one of them, so if `d`
    ///   decreases in `t` one `q * a_i + r >= 0` suffices, and if it
    ///   increases all of them are needed; `max` is the mirror image;
    /// - for `t = ⌊a / b⌋` with `b >= 1`, `b * t` lies in `[a - b + 1, a]`,
    ///   which bounds `b * d` from below by some `x`; since `d` is an integer,
    ///   `x > -b` (that is, `x + b - 1 >= 0`) already gives `d >= 0`.
    fn nonneg_by_elimination(&mut self, d: &Dim) -> bool {
        let candidates: BTreeSet<&Atom> = d
            .terms
            .keys()
            .flat_map(|m| m.0.iter().map(|(atom, _)| atom))
            .filter(|atom| matches!(atom, Atom::FloorDiv(..) | Atom::Min(_) | Atom::Max(_)))
            .collect();
        for atom in candidates {
            if self.fuel == 0 {
                return false;
            }
            let Some((q, r)) = d.split_linear(atom) else { continue };
            let increasing = match self.sign(&q) {
                Sign::NonNeg => true,
                Sign::NonPos => false,
                Sign::Unknown => continue,
            };
            let proven = match atom {
                Atom::Min(ops) => self.nonneg_by_cases(ops, &q, &r, !increasing),
                Atom::Max(ops) => self.nonneg_by_cases(ops, &q, &r, increasing),
                Atom::FloorDiv(a, b) => {
                    if self.divisor_sign(b) != Some(Sign::NonNeg) {
                        continue;
                    }
                    let bound = if increasing { a.sub(b).add_const(1) } else { (**a).clone() };
                    let x = q.mul(&bound).add(&b.mul(&r));
                    self.nonneg(&x.add(b).add_const(-1))
                }
                _ => false,
            };
            if proven {
                return true;
            }
        }
        false
    }

    /// `q * op + r >= 0` for one operand (`any`) or for all of them.
    fn nonneg_by_cases(&mut self, ops: &[Dim], q: &Dim, r: &Dim, any: bool) -> bool {
        for op in ops {
            let holds = self.nonneg(&q.mul(op).add(r));
            if holds == any {
                return any;
            }
        }
        !any
    }
}

/// One term of a dimension as a back end spells it: `coeff` times the
/// product of `factors`, each raised to its power (at least 1). A
/// read-only view of the normal form; see [`Dim::terms`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term<'a> {
    pub coeff: i64,
    pub factors: Vec<(Factor<'a>, u32)>,
}

/// A factor of a [`Term`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Factor<'a> {
    Var(DimVar),
    /// `⌊n / d⌋`; `d` is positive where code is generated (see the normal
    /// form).
    FloorDiv(&'a Dim, &'a Dim),
    /// `min` of at least two operands.
    Min(&'a [Dim]),
    /// `max` of at least two operands.
    Max(&'a [Dim]),
    /// `a + b`, kept unevaluated because folding it overflows `i64`.
    Sum(&'a Dim, &'a Dim),
    /// `a * b`, kept unevaluated because folding it overflows `i64`.
    Product(&'a Dim, &'a Dim),
}

impl Dim {
    /// The terms in display order (positive coefficients, then negative
    /// ones, then the constant, which leads instead when no other term is
    /// positive); empty for zero. Back ends spell a dimension from these.
    pub fn terms(&self) -> Vec<Term<'_>> {
        self.ordered_terms()
            .into_iter()
            .map(|(m, coeff)| Term {
                coeff,
                factors: m
                    .0
                    .iter()
                    .map(|(atom, pow)| {
                        let factor = match atom {
                            Atom::Var(v) => Factor::Var(*v),
                            Atom::FloorDiv(a, b) => Factor::FloorDiv(a, b),
                            Atom::Min(ops) => Factor::Min(ops),
                            Atom::Max(ops) => Factor::Max(ops),
                            Atom::Sum(a, b) => Factor::Sum(a, b),
                            Atom::Product(a, b) => Factor::Product(a, b),
                        };
                        (factor, *pow)
                    })
                    .collect(),
            })
            .collect()
    }
}

// Rendering: text for people and the back ends' spellings share the term
// order and the notion of a "primary" (operand-safe) expression.
impl Dim {
    /// The terms in display order: positive coefficients, then negative ones,
    /// then the constant, except that a positive constant leads when no other
    /// term is positive (`3 - N` rather than `-N + 3`).
    fn ordered_terms(&self) -> Vec<(&Monomial, i64)> {
        let mut positive = Vec::new();
        let mut negative = Vec::new();
        let mut constant = None;
        for (m, &c) in &self.terms {
            if m.is_one() {
                constant = Some((m, c));
            } else if c > 0 {
                positive.push((m, c));
            } else {
                negative.push((m, c));
            }
        }
        let mut out = Vec::with_capacity(self.terms.len());
        match constant {
            Some(k) if positive.is_empty() && k.1 > 0 => {
                out.push(k);
                out.extend(negative);
            }
            _ => {
                out.extend(positive);
                out.extend(negative);
                out.extend(constant);
            }
        }
        out
    }

    /// Whether `self` reads unambiguously as an operand of a binary operator
    /// without parentheses: a non-negative constant, a variable or a
    /// `min`/`max` call.
    pub fn is_primary(&self) -> bool {
        if let Some(c) = self.as_constant() {
            return c >= 0;
        }
        matches!(self.as_atom(), Some(Atom::Var(_) | Atom::Min(_) | Atom::Max(_)))
    }

    fn write_sum(&self, out: &mut String, names: &dyn Fn(DimVar) -> String) {
        let terms = self.ordered_terms();
        if terms.is_empty() {
            out.push('0');
        }
        for (i, (m, c)) in terms.into_iter().enumerate() {
            let leading = i == 0;
            match (leading, c < 0) {
                (true, true) => out.push('-'),
                (true, false) => {}
                (false, true) => out.push_str(" - "),
                (false, false) => out.push_str(" + "),
            }
            write_term(out, m, c.unsigned_abs(), leading && c < 0, names);
        }
    }

    fn write_operand(&self, out: &mut String, names: &dyn Fn(DimVar) -> String) {
        if self.is_primary() {
            self.write_sum(out, names);
        } else {
            out.push('(');
            self.write_sum(out, names);
            out.push(')');
        }
    }
}

/// Writes `magnitude * m`; `negated` says a unary minus precedes it, which
/// must not bind to the numerator of a leading division (`-(N / 2)`).
fn write_term(out: &mut String, m: &Monomial, magnitude: u64, negated: bool, names: &dyn Fn(DimVar) -> String) {
    if m.is_one() {
        let _ = write!(out, "{magnitude}");
        return;
    }
    let in_product = magnitude != 1 || m.0.len() > 1 || negated;
    if magnitude != 1 {
        let _ = write!(out, "{magnitude} * ");
    }
    for (i, (atom, pow)) in m.0.iter().enumerate() {
        if i > 0 {
            out.push_str(" * ");
        }
        // Divisions and unfolded products are binary operators themselves.
        let parens = matches!(atom, Atom::FloorDiv(..) | Atom::Product(..)) && (in_product || *pow > 1);
        if parens {
            out.push('(');
        }
        write_atom(out, atom, names);
        if parens {
            out.push(')');
        }
        if *pow > 1 {
            let _ = write!(out, " ** {pow}");
        }
    }
}

fn write_atom(out: &mut String, atom: &Atom, names: &dyn Fn(DimVar) -> String) {
    match atom {
        Atom::Var(v) => out.push_str(&names(*v)),
        Atom::FloorDiv(a, b) => {
            a.write_operand(out, names);
            out.push_str(" / ");
            b.write_operand(out, names);
        }
        Atom::Min(ops) => write_call(out, "min", ops, names),
        Atom::Max(ops) => write_call(out, "max", ops, names),
        Atom::Sum(a, b) => {
            out.push('(');
            a.write_sum(out, names);
            out.push_str(" + ");
            // `+` binds loosest, so only a leading minus needs parentheses.
            if b.ordered_terms().first().is_some_and(|(_, c)| *c < 0) {
                b.write_operand(out, names);
            } else {
                b.write_sum(out, names);
            }
            out.push(')');
        }
        Atom::Product(a, b) => {
            a.write_operand(out, names);
            out.push_str(" * ");
            b.write_operand(out, names);
        }
    }
}

/// `f(a, f(b, c))`: the language's `min`/`max` take two arguments.
fn write_call(out: &mut String, f: &str, ops: &[Dim], names: &dyn Fn(DimVar) -> String) {
    let mut open = 0;
    for (i, op) in ops.iter().enumerate() {
        if i + 1 < ops.len() {
            let _ = write!(out, "{f}(");
            op.write_sum(out, names);
            out.push_str(", ");
            open += 1;
        } else {
            op.write_sum(out, names);
        }
    }
    for _ in 0..open {
        out.push(')');
    }
}

impl fmt::Display for Dim {
    /// Debugging text with variables named `d0`, `d1`, ...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display(&|v| format!("d{}", v.0)))
    }
}

impl fmt::Debug for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Dim({self})")
    }
}

#[cfg(test)]
#[path = "dim_tests.rs"]
mod tests;
