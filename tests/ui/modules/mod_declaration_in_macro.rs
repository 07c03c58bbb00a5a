use einlang::einlang;

einlang! {
    mod helpers;
    pub fn f(x: f32) -> f32 { x }
}

fn main() {}
