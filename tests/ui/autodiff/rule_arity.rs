use einlang::einlang;

einlang! {
    fn softclip(x, limit) { limit * x / (limit + x * x) }
    @fn softclip(x) { @x }

    pub fn f(x: f32) -> f32 { softclip(x, 2.0) }
}

fn main() {}
