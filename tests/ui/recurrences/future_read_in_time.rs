use einlang::einlang;

einlang! {
    pub fn run(x0: f64, n: i64) -> f64 {
        let x[0] = x0;
        let x[t in 1..n] = x[t + 1] * 0.5;
        x[n - 1]
    }
}

fn main() {}
