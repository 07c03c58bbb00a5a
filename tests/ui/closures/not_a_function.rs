use einlang::einlang;

einlang! {
    pub fn f(x: f32) -> f32 {
        let a = 2.0;
        a(x)
    }
}

fn main() {}
