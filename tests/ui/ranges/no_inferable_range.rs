use einlang::einlang;

einlang! {
    pub fn f(x: [f32; N]) -> f32 {
        sum[k](x[2 * k + 1] * 0.5) + sum[j](1.0)
    }
}

fn main() {}
