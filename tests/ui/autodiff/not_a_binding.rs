use einlang::einlang;

einlang! {
    pub fn f(x: [f32; N]) -> [f32; N] {
        let y[i] = x[i] * x[i];
        let loss = sum[i](y[i]);
        let g[i] = @loss / @i;
        g
    }
}

fn main() {}
