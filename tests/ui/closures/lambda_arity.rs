use einlang::einlang;

einlang! {
    pub fn f(x: f32) -> f32 {
        let add = |a, b| a + b;
        add(x)
    }
}

fn main() {}
