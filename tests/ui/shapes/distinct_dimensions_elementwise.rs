use einlang::einlang;

einlang! {
    pub fn add(a: [f32; N], b: [f32; M]) -> [f32; N] {
        let c[i] = a[i] + b[i];
        c
    }
}

fn main() {}
