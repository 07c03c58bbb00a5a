use einlang::einlang;

einlang! {
    let scale = 2.0;
    pub fn scaled(x: f32) -> f32 {
        x * scale
    }
    print(scaled(1.0));
}

fn main() {}
