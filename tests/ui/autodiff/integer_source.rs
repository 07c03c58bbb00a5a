use einlang::einlang;

einlang! {
    pub fn f(x: [f32; N], labels: [i64; N]) -> [i64; N] {
        let loss = sum[i](x[i] * (labels[i] as f32));
        @loss / @labels
    }
}

fn main() {}
