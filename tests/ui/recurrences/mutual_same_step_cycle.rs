// Recurrences that read each other at the same step in both directions:
// no order of the clauses computes them.
einlang::einlang! {
    pub fn f(x: [f64; T]) -> [f64; T] {
        let a[0] = 1.0;
        let b[0] = 0.0;
        let a[t in 1..T] = b[t] + x[t];
        let b[t in 1..T] = a[t] - b[t - 1];
        a
    }
}

fn main() {}
