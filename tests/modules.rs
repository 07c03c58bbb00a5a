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
