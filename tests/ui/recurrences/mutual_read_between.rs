// A statement between the clauses of recurrences that read each other
// cannot read them: they exist after the last clause.
einlang::einlang! {
    pub fn f(x: [f64; T]) -> [f64; T] {
        let a[0] = 1.0;
        let a[t in 1..T] = b[t - 1] + x[t];
        let first = a[0];
        let b[0] = 0.0;
        let b[t in 1..T] = a[t] - b[t - 1] * first;
        a
    }
}

fn main() {}
