use einlang::einlang;

einlang! {
    pub fn run(x0: f64, n: i64) -> f64 {
        let x[0] = x0;
        let x[t] = x[t - 1] * 0.5 where t in 1..n;
        x[n - 1]
    }
}

fn main() {}
