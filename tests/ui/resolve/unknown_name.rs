use einlang::einlang;

einlang! {
    pub fn scale(weight: [f32; N], s: f32) -> [f32; N] {
        let y[i] = wieght[i] * s;
        y
    }
}

fn main() {}
