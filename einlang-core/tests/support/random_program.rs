//! Random well-typed Einlang programs with a derivative request, for
//! property tests of `transform::autodiff`: a few indexed definitions and
//! a scalar loss over two vectors `x`, `w` of length `N` and a matrix
//! `a: [N, N]`, built from arithmetic, `std::math` functions, `min`/`max`,
//! powers, reductions (`sum`, `max`, `min`, `prod`), guards, `if`,
//! affine reads, matrices read transposed, and recurrences (a scalar
//! state, and a vector state mixed by `a`, read at its last step and over
//! time). Every value stays in a range where the derivative exists and
//! finite differences are accurate (no kinks near the test points are
//! guaranteed only up to the usual luck of random programs; the generator
//! keeps arguments of `ln`, `sqrt` and `/` away from zero).

/// A small deterministic generator (xorshift64*).
pub struct Gen(u64);

impl Gen {
    pub fn new(seed: u64) -> Gen {
        Gen(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A smooth scalar expression at point `i` (an index variable in scope),
/// reading `leaves` (expressions valid at `i`).
fn expr(g: &mut Gen, depth: u32, leaves: &[String]) -> String {
    if depth == 0 || g.below(4) == 0 {
        return match g.below(5) {
            0 => format!("{:.2}f64", 0.25 + g.below(8) as f64 * 0.25),
            _ => leaves[g.below(leaves.len() as u64) as usize].clone(),
        };
    }
    let a = expr(g, depth - 1, leaves);
    let b = expr(g, depth - 1, leaves);
    match g.below(14) {
        0 => format!("({a} + {b})"),
        1 => format!("({a} - {b})"),
        2 | 3 => format!("({a} * {b})"),
        4 => format!("({a} / (1.5 + {b} * {b}))"),
        5 => format!("sin({a})"),
        6 => format!("cos({a})"),
        7 => format!("tanh({a})"),
        8 => format!("exp(0.3 * {a})"),
        9 => format!("sqrt(1.0 + {a} * {a})"),
        10 => format!("ln(2.0 + sin({a}))"),
        11 => format!("({a} ** 2)"),
        12 => format!("((1.2 + {a} * {a}) ** 1.5)"),
        _ => format!("(if {a} > 0.0 {{ {b} }} else {{ 0.5 * {b} }})"),
    }
}

/// `expr`, multiplied by one of the leaves so that it reads at least one
/// tensor at the point (which gives the point's index its range).
fn reading(g: &mut Gen, depth: u32, leaves: &[String]) -> String {
    let leaf = leaves[g.below(leaves.len() as u64) as usize].clone();
    let e = expr(g, depth, leaves);
    format!("({leaf} * {e})")
}

/// One program: the loss function `p_{n}` and its gradient `g_{n}` with
/// respect to `x` (both over the same statements).
pub fn program(seed: u64, n: usize) -> String {
    let mut g = Gen::new(seed);
    let mut stmts = Vec::new();
    let mut vectors = vec!["x".to_string(), "w".to_string()];
    let defs = 1 + g.below(3);
    for d in 0..defs {
        let name = format!("v{d}");
        let at = |vectors: &[String], i: &str| -> Vec<String> { vectors.iter().map(|v| format!("{v}[{i}]")).collect() };
        let leaves = at(&vectors, "i");
        let body = match g.below(8) {
            // A contraction with the matrix.
            0 => {
                let inner: Vec<String> = vectors.iter().map(|v| format!("{v}[k]")).collect();
                let e = reading(&mut g, 2, &inner);
                format!("let {name}[i in 0..N] = sum[k](a[i, k] * {e});")
            }
            // An affine (stencil) read, guarded at the edge.
            1 => {
                let v = &vectors[g.below(vectors.len() as u64) as usize];
                let e = reading(&mut g, 2, &leaves);
                format!("let {name}[i in 0..N] = if i + 1 < N {{ {v}[i + 1] * {e} }} else {{ {e} }};")
            }
            // A smooth reduction over the row of the matrix.
            2 => {
                let inner: Vec<String> = vectors.iter().map(|v| format!("{v}[k]")).collect();
                let e = reading(&mut g, 2, &inner);
                let op = ["max", "min", "prod"][g.below(3) as usize];
                let body = if op == "prod" { format!("(0.5 + 0.1 * tanh({e}))") } else { format!("a[i, k] * {e}") };
                format!("let {name}[i in 0..N] = {op}[k]({body});")
            }
            // A recurrence along the vectors' axis with a scalar state.
            5 => {
                let e = reading(&mut g, 2, &at(&vectors, "t"));
                let c = 0.25 + g.below(4) as f64 * 0.25;
                let v = &vectors[g.below(vectors.len() as u64) as usize];
                format!(
                    "let {name}[0] = 0.5 * {v}[0];\n        let {name}[t in 1..N] = tanh({c:.2} * {name}[t - 1] + {e});"
                )
            }
            // A recurrence with a vector state mixed by the matrix, observed
            // at its last step and summed over time.
            6 => {
                let v = &vectors[g.below(vectors.len() as u64) as usize];
                let mut leaves = at(&vectors, "j");
                leaves.extend(at(&vectors, "t"));
                let e = reading(&mut g, 2, &leaves);
                format!(
                    "let h{d}[0, j] = {v}[j];\n        \
                     let h{d}[t in 1..N, j] = tanh(0.5 * sum[k](a[j, k] * h{d}[t - 1, k]) + {e});\n        \
                     let {name}[i in 0..N] = h{d}[N - 1, i] + 0.25 * sum[t](h{d}[t, i]);"
                )
            }
            // A matrix built from the vectors, read transposed.
            7 => {
                let mut leaves = at(&vectors, "i");
                leaves.extend(at(&vectors, "j"));
                let e = reading(&mut g, 2, &leaves);
                let u = &vectors[g.below(vectors.len() as u64) as usize];
                format!(
                    "let m{d}[i in 0..N, j in 0..N] = a[i, j] * {e};\n        \
                     let {name}[i in 0..N] = sum[j](m{d}[j, i] * {u}[j]);"
                )
            }
            // A guarded point expression.
            3 => {
                let e = reading(&mut g, 3, &leaves);
                format!("let {name}[i in 0..N] = {e} where i != 1;")
            }
            _ => {
                let e = reading(&mut g, 3, &leaves);
                format!("let {name}[i in 0..N] = {e};")
            }
        };
        stmts.push(body);
        vectors.push(name);
    }
    let leaves: Vec<String> = vectors.iter().map(|v| format!("{v}[i]")).collect();
    let e = format!("x[i] * {}", reading(&mut g, 3, &leaves));
    let body = stmts.join("\n        ");
    format!(
        "pub fn p_{n}(x: [f64; N], w: [f64; N], a: [f64; N, N]) -> f64 {{
        {body}
        let l = sum[i]({e});
        l
    }}
    pub fn g_{n}(x: [f64; N], w: [f64; N], a: [f64; N, N]) -> [f64; N] {{
        {body}
        let l = sum[i]({e});
        @l / @x
    }}"
    )
}

/// A whole `einlang!` block of `count` programs from `seed`.
pub fn block(seed: u64, count: usize) -> String {
    let programs: Vec<String> = (0..count).map(|n| program(seed.wrapping_add(n as u64 * 7919), n)).collect();
    format!("use std::math::*;\n    {}", programs.join("\n    "))
}
