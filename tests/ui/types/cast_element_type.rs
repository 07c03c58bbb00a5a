use einlang::einlang;

einlang! {
    pub fn widen(x: [f32; N]) -> [f64; N] {
        x as [f64; N]
    }
}

fn main() {}
