use einlang::einlang;

einlang! {
    fn scaled(x: f32) -> f32 {
        x * scale
    }
    print(scaled(1.0));
    let scale = 2.0;
}

fn main() {}
