use einlang::einlang;

einlang! {
    @fn gauss(x) { -2.0 * x * @x }

    pub fn f(x: f32) -> f32 { x }
}

fn main() {}
