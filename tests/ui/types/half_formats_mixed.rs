use einlang::einlang;

einlang! {
    pub fn add(a: f16, b: bf16) -> f16 {
        a + b
    }
}

fn main() {}
