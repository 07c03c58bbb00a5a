use einlang::einlang;

einlang! {
    pub fn f(x: f32) -> f32 {
        let y = x * x;
        @y
    }
}

fn main() {}
