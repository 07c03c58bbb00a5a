use einlang::einlang;

einlang! {
    // Every branch recurses: nothing gives the result's type.
    fn spin(n) { if n > 0 { spin(n - 1) } else { spin(n + 1) } }

    pub fn run(n: i64) -> i64 {
        spin(n)
    }
}

fn main() {}
