use einlang::einlang;

einlang! {
    fn outer(x) {
        let y[..a, ..b] = x[..a, ..b];
        y
    }

    pub fn call(m: [f32; R, C]) -> [f32; R, C] {
        outer(m)
    }
}

fn main() {}
