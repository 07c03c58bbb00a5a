use einlang::einlang;

einlang! {
    pub fn diff(x: [f32; N]) -> [f32; N] {
        let d[i] = x[i + 1] - x[i];
        d
    }
}

fn main() {}
