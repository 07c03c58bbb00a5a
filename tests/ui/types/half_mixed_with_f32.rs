use einlang::einlang;

// Half precision computes in f32 inside an expression, but values of two
// types never mix without a cast, as with any other pair of types.
einlang! {
    pub fn scale(x: [f16; N], w: [f32; N]) -> [f16; N] {
        let y[i] = x[i] * w[i];
        y
    }
}

fn main() {}
