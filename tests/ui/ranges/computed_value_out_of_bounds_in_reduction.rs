use einlang::einlang;

einlang! {
    fn triple(v: f32) -> [f32; 3] {
        [v, 2.0 * v, 3.0 * v]
    }

    pub fn spread(x: [f32; N]) -> [f32; N] {
        let y[i] = sum[k](x[k] * triple(x[i])[3]);
        y
    }
}

fn main() {}
