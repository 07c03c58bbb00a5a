use einlang::einlang;

einlang! {
    fn apply(f: (f32) -> f32, x: f32) -> f32 { f(x) }

    // The lambda gives a `bool` where `apply` declares `f32`.
    pub fn check(x: f32) -> f32 {
        apply(|v| v > 1.0, x)
    }
}

fn main() {}
