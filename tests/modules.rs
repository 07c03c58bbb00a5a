//! Module resolution: inline modules, `super::` and `crate::` paths,
//! aliases, globs and re-exports. Values are computed by hand.

use einlang::einlang;

einlang! {
    mod geometry {
        pub fn area(w: f64, h: f64) -> f64 { w * h }

        pub mod solids {
            pub fn volume(w: f64, h: f64, d: f64) -> f64 { super::area(w, h) * d }
            pub fn cube(a: f64) -> f64 { crate::geometry::solids::volume(a, a, a) }
        }

        pub use solids::cube;
    }

    mod everything {
        pub use super::geometry::*;
    }

    use geometry::solids as sol;
    use geometry::cube;

    pub fn measures(a: f64) -> (f64, f64, f64, f64) {
        (geometry::area(a, 2.0), sol::volume(a, 2.0, 3.0), cube(a), everything::area(a, a))
    }
}

#[test]
fn paths_aliases_and_reexports_resolve() {
    assert_eq!(measures(2.0).unwrap(), (4.0, 12.0, 8.0, 4.0));
}

#[test]
fn public_functions_of_modules_are_reachable_from_rust_by_path() {
    assert_eq!(geometry::area(3.0, 4.0).unwrap(), 12.0);
    assert_eq!(geometry::solids::volume(1.0, 2.0, 3.0).unwrap(), 6.0);
    assert_eq!(geometry::solids::cube(2.0).unwrap(), 8.0);
}

mod seed_paths {
    einlang::einlang! {
        use std::math;
        use std::math::constants::pi;
        use std::math::exp::exp;
        use std::math::log::ln;
        use std::math::basic;

        /// The seed's import paths into `std::math`, its constants called
        /// as functions, and unary plus.
        pub fn values() -> (f32, f32, f32, f32, f32, f32) {
            let x = +2.0;
            (pi(), math::e(), exp(1.0) - math::e, ln(math::e), basic::sqrt(x * 8.0), std::math::trig::cos(0.0))
        }

        /// A module and a function of one name live side by side.
        mod area {
            pub fn area(r: f64) -> f64 { super::pi * r * r }
        }
        fn area(r: f64) -> f64 { 2.0 * area::area(r) }

        pub fn double_area(r: f64) -> f64 { area(r) }
    }
}

#[test]
fn seed_module_paths_resolve() {
    let (pi, e, diff, one, four, cos0) = seed_paths::values().unwrap();
    assert_eq!(pi, std::f32::consts::PI);
    assert_eq!(e, std::f32::consts::E);
    assert!(diff.abs() < 1e-6, "{diff}");
    assert!((one - 1.0).abs() < 1e-6, "{one}");
    assert_eq!(four, 4.0);
    assert_eq!(cos0, 1.0);
    assert_eq!(seed_paths::double_area(1.0).unwrap(), 2.0 * std::f64::consts::PI);
}

mod nested {
    einlang::einlang! {
        /// Functions nested in a body are visible in that block only, and
        /// see no locals around them (as in Rust); blocks may `use` too.
        pub fn outer(x: i64) -> i64 {
            let local = 300;
            let before = twice(x);
            fn twice(v: i64) -> i64 { v * 2 }
            fn add3(a: i64, b: i64, c: i64) -> i64 {
                fn inner(v: i64) -> i64 { v + 1 }
                twice(a) + b + inner(c)
            }
            add3(before, local, 25)
        }

        pub fn root(x: f64) -> f64 {
            use std::math::{sqrt as root2};
            root2(x)
        }

        /// Another body may nest a function of the same name.
        pub fn other(x: i64) -> i64 {
            fn twice(v: i64) -> i64 { v * 20 }
            twice(x)
        }

        /// Items in deeper blocks: a block expression, an `if` branch, a
        /// `match` arm; constants too. Each is visible in its block, and
        /// in the functions nested there.
        pub fn deeper(x: f64, flag: bool) -> (f64, f64) {
            const SCALE: f64 = 3.0;
            let a = {
                fn scaled(v) { v * SCALE }
                scaled(x)
            };
            let b = if flag {
                fn twice(v: f64) -> f64 { v * 2.0 }
                const K: f64 = 10.0;
                twice(a) + K
            } else {
                a
            };
            let c = match flag {
                true => {
                    fn twice(v) { -v * 2.0 }
                    twice(b)
                }
                false => b,
            };
            (b, c)
        }
    }
}

mod top_level_blocks {
    einlang::einlang! {
        // Two blocks of the program's statements nest functions of one name.
        let q = {
            fn step(v) { v + 1 }
            step(2)
        };
        let r = {
            fn step(v) { v + 100 }
            step(q)
        };
        assert(q == 3 && r == 103, "items in top-level blocks");
    }
}

mod block_modules {
    einlang::einlang! {
        fn base() -> f32 { 10.0 }
        /// A module nested in a body: its items reach the module around the
        /// function with `super::`, and the block names them by path or
        /// imports them.
        pub fn with_helpers(x: f32) -> f32 {
            mod helpers {
                pub fn double(x) { x * 2.0 }
                pub fn plus_base(x: f32) -> f32 { x + super::base() }
                pub mod inner {
                    pub fn triple(x) { fn by(v) { v * 3.0 } by(x) }
                }
            }
            use helpers::inner::triple;
            helpers::double(x) + helpers::plus_base(x) + triple(x)
        }
        /// Another block nests a module of the same name.
        pub fn other(x: f32) -> f32 {
            let y = {
                mod helpers { pub fn double(x) { x * 4.0 } }
                helpers::double(x)
            };
            y
        }
        let k = {
            mod m { pub const K: i64 = 7; }
            m::K * 2
        };
        assert(k == 14, "a constant of a module nested in a top-level block");
    }
}

#[test]
fn modules_nested_in_blocks() {
    // 2x + (x + 10) + 3x
    assert_eq!(block_modules::with_helpers(1.5).unwrap(), 3.0 + 11.5 + 4.5);
    assert_eq!(block_modules::other(1.5).unwrap(), 6.0);
    block_modules::main().unwrap();
}

#[test]
fn nested_functions_and_block_imports() {
    let x = 7i64;
    assert_eq!(nested::outer(x).unwrap(), (2 * x) * 2 + 300 + 26);
    assert_eq!(nested::root(2.25).unwrap(), 1.5);
    assert_eq!(nested::other(3).unwrap(), 60);
    // a = 3x; b = 2a + 10 or a; c = -2b or b.
    assert_eq!(nested::deeper(1.5, true).unwrap(), (19.0, -38.0));
    assert_eq!(nested::deeper(1.5, false).unwrap(), (4.5, 4.5));
    top_level_blocks::main().unwrap();
}
