use einlang::einlang;

einlang! {
    pub fn f(x: [f32; N], w: [f32; N], b: f32) -> ([f32; N], f32) {
        let loss = sum[i](x[i] * w[i]);
        (@loss / @w, @loss / @b)
    }
}

fn main() {}
