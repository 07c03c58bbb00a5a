use einlang::einlang;

einlang! {
    pub fn grow(x: [f32; 3]) -> [f32; 4] {
        x as [f32; 4]
    }
}

fn main() {}
