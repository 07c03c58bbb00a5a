use einlang::einlang;

einlang! {
    // `a` and `b` read each other, so they are one recurrence: one type.
    pub fn coupled(x: [f32; N], y: [i32; N]) -> f32 {
        let a[0] = x[0];
        let b[0] = y[0];
        let a[t in 1..N] = a[t - 1] + x[t] * (b[t - 1] as f32);
        let b[t in 1..N] = b[t - 1] + y[t] * (a[t - 1] as i32);
        a[N - 1]
    }
}

fn main() {}
