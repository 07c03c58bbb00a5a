use einlang::einlang;

einlang! {
    fn twice(v) { v * 2.0 }

    // The rank of `x` is known only once types are inferred, too late to
    // expand a rest index over it.
    let x = twice([[1.0, 2.0], [3.0, 4.0]]);
    let y[..b] = x[..b] * 2.0;
}

fn main() {}
