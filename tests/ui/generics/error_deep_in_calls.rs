use einlang::einlang;

// An error two generic calls down is shown where it happens, below the
// errors of the calls that led to it.
einlang! {
    fn inner(x, k: i64) { x * 2.0 }
    fn mid(x) { let k = if x > 0.0 { 1 } else { 0 }; inner(x, k) }
    fn outer(x) { mid(x) }

    pub fn f(x: f32) -> f32 { outer(x) }
}

fn main() {}
