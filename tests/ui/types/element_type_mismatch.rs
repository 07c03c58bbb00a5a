use einlang::einlang;

einlang! {
    pub fn mix(x: [f32; N], y: [f64; N]) -> [f32; N] {
        let z[i] = x[i] + y[i];
        z
    }
}

fn main() {}
