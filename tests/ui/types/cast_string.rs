use einlang::einlang;

einlang! {
    pub fn parse(s: str) -> f32 {
        s as f32
    }
}

fn main() {}
