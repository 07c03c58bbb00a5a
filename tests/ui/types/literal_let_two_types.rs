use einlang::einlang;

einlang! {
    // `v` becomes `[i64; 2]` at its first use that needs another type; a
    // later use that needs `i32` is then an error.
    pub fn two_uses(k: i64, m: i32) -> i64 {
        let v = [1, 2];
        let a = v[0] + k;
        let b = v[1] * m;
        a
    }
}

fn main() {}
