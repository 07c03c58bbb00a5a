use einlang::einlang;

einlang! {
    pub fn f(x: [f32; N]) -> [f32; N] {
        let y[i] = x[i, 0];
        y
    }
}

fn main() {}
