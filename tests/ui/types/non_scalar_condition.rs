use einlang::einlang;

einlang! {
    pub fn pick(mask: [bool; N], a: f32, b: f32) -> f32 {
        if mask { a } else { b }
    }
}

fn main() {}
