// The clauses of a recurrence that reads another one reading it need one
// number of indices.
einlang::einlang! {
    pub fn f(x: [f64; T]) -> [f64; T] {
        let a[0] = 1.0;
        let b[0] = 0.0;
        let a[t in 1..T] = b[t - 1, 0] + x[t];
        let b[t in 1..T, j in 0..2] = a[t];
        a
    }
}

fn main() {}
