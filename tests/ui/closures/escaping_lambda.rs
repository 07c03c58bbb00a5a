use einlang::einlang;

einlang! {
    pub fn f(x: f32, up: bool) -> f32 {
        let inc = |v| v + 1.0;
        let dec = |v| v - 1.0;
        let g = if up { inc } else { dec };
        g(x)
    }
}

fn main() {}
