use einlang::einlang;

einlang! {
    pub fn total(x: [f32; N]) -> f32 {
        let s = sum[i](x[i]) where i in 0..N;
        s
    }
}

fn main() {}
