use einlang::einlang;

einlang! {
    pub fn reshape(x: [f32; N]) -> [f32; 2, 3] {
        x as [f32; 2, 3]
    }
}

fn main() {}
