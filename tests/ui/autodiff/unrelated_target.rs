use einlang::einlang;

einlang! {
    pub fn f(x: [f32; N], w: [f32; N]) -> [f32; N] {
        let scale = sum[i](w[i] * w[i]);
        let loss = sum[i](x[i] * x[i]);
        @scale / @x
    }
}

fn main() {}
