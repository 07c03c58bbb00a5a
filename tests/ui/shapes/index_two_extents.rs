use einlang::einlang;

einlang! {
    pub fn dot(a: [f32; 3], b: [f32; 4]) -> f32 {
        sum[k](a[k] * b[k])
    }
}

fn main() {}
