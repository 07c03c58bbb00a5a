use einlang::einlang;

einlang! {
    pub fn f(x: [f32; N]) -> [f32; N] {
        let y[i] = softplus(x[i]);
        y
    }
}

fn main() {}
