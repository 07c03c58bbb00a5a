use einlang::einlang;

einlang! {
    fn apply(f, x) { f(x) }

    pub fn g(x: f32) -> f32 {
        apply(3.0, x)
    }
}

fn main() {}
