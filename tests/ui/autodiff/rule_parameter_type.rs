use einlang::einlang;

einlang! {
    use std::math::exp;

    fn bump(x: f32) -> f32 { exp(-x * x) }
    @fn bump(x: [f32; N]) { -2.0 * x * bump(x) * @x }

    pub fn f(x: f32) -> f32 { bump(x) }
}

fn main() {}
