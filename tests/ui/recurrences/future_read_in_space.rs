use einlang::einlang;

einlang! {
    pub fn run(u0: [f64; N], steps: i64) -> [f64; N] {
        let u[0, i] = u0[i];
        let u[t in 1..steps, i in 0..N - 1] = u[t - 1, i] + u[t, i + 1];
        u[steps - 1]
    }
}

fn main() {}
