use einlang::einlang;

einlang! {
    // `assert` has no value to collect.
    pub fn check(v: [i32; N]) -> i64 {
        let checks = [assert(x > 0, "positive") | x in v];
        len(checks)
    }
}

fn main() {}
