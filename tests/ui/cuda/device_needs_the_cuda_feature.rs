use einlang::einlang;

einlang! {
    #[device(cuda)]
    pub fn twice(x: [f32; N]) -> [f32; N] {
        let y[i] = 2.0 * x[i];
        y
    }
}

fn main() {}
