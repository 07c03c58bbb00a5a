use einlang::einlang;

einlang! {
    use std::math::{exp, sqr};

    pub fn f(x: f32) -> f32 {
        exp(x)
    }
}

fn main() {}
