//! Functions that read the program's top-level `let` bindings, as the
//! seed's programs do (weights loaded at the top, used by `fn`s). The
//! values are computed by hand.

mod program {
    einlang::einlang! {
        let w = [[1.0, 2.0], [3.0, 4.0]];
        let bias = 0.5;

        /// Reads `w` and `bias` directly.
        fn score(x) {
            let y[j] = sum[i](x[i] * w[j, i]) + bias;
            y
        }

        /// Reads them through `score`, and `scale` itself.
        fn twice(x) { score(x) * scale }

        let scale = 2.0;
        let v = [1.0, -1.0];
        let s = score(v);
        let t = twice(v);
        assert(s[0] == -0.5 && s[1] == -0.5, "w v + bias: [1 - 2, 3 - 4] + 0.5");
        assert(t[0] == -1.0 && t[1] == -1.0, "twice of that");

        /// A local of the same name hides the top-level binding.
        fn shadowed(x: f32) -> f32 {
            let bias = 10.0;
            x + bias
        }
        assert(shadowed(1.0) == 11.0, "the local `bias` is read");
    }
}

#[test]
fn functions_read_top_level_bindings() {
    program::main().unwrap();
}
