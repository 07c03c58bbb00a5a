use einlang::einlang;

einlang! {
    pub fn shift(x: [f32; N]) -> [f32; N] {
        let y[i in 0..N] = x[i + 1];
        y
    }
}

fn main() {}
