use einlang::einlang;

einlang! {
    pub fn widen(x: [f32; N]) -> [f64; *] {
        x as [f64; *]
    }
}

fn main() {}
