use einlang::einlang;

einlang! {
    pub fn fib(n: i64) -> i64 {
        let f[0] = 0i64;
        let f[i in 2..n] = f[i - 1] + f[i - 2];
        f[n - 1]
    }
}

fn main() {}
