use einlang::einlang;

einlang! {
    fn axpy(a: f32, x: [f32; N], y: [f32; N]) -> [f32; N] {
        let z[i] = a * x[i] + y[i];
        z
    }

    pub fn twice(x: [f32; N]) -> [f32; N] {
        axpy(2.0, x)
    }
}

fn main() {}
