//! `typeof(x)`: the name of a value's type, as a string known at compile
//! time. Scalars give their type's name, strings `str`, tensors
//! `rectangular` and tuples `tuple`, as the seed implementation says.

use einlang::einlang;
use einlang::ndarray::array;

einlang! {
    pub fn names(x: [f32; N], a: i64, b: f64) -> (str, str, str, str, str, str) {
        (typeof(x), typeof(a), typeof(b), typeof(42), typeof("hi"), typeof((a, b)))
    }

    pub fn elementwise(x: [f32; N]) -> (str, str) {
        (typeof(x[0]), typeof(x[0] > 1.0))
    }

    pub fn described(k: i32) -> str {
        "k has type {typeof(k)}"
    }

    pub fn of_results(x: [f64; N]) -> (str, str) {
        (typeof(sum[i](x[i])), typeof(len(x)))
    }

    /// Strings compare with `==` and `!=`: the seed's programs test
    /// `typeof(x) == "f32"` in generic code.
    fn kind_of(x) -> str {
        if typeof(x) == "rectangular" { "tensor" } else if typeof(x) != "str" { "scalar" } else { "text" }
    }

    pub fn kinds(x: [f32; N], k: i64, s: str) -> (str, str, str) {
        (kind_of(x), kind_of(k), kind_of(s))
    }

    pub fn same_text(a: str, b: str, n: i32) -> (bool, bool, bool) {
        (a == b, a != "", "{n}" == b)
    }
}

#[test]
fn strings_compare() {
    let x = array![1.0f32];
    assert_eq!(kinds(&x, 2, "hi").unwrap(), ("tensor".into(), "scalar".into(), "text".into()));
    assert_eq!(same_text("12", "12", 12).unwrap(), (true, true, true));
    assert_eq!(same_text("", "7", 8).unwrap(), (false, false, false));
}

#[test]
fn type_names() {
    let x = array![1.0f32, 2.0];
    let got = names(&x, 3, 0.5).unwrap();
    assert_eq!(got, ("rectangular".into(), "i64".into(), "f64".into(), "i32".into(), "str".into(), "tuple".into()));
    assert_eq!(elementwise(&x).unwrap(), ("f32".into(), "bool".into()));
    assert_eq!(described(7).unwrap(), "k has type i32");
    assert_eq!(of_results(&array![1.0f64, 2.0]).unwrap(), ("f64".into(), "i64".into()));
}
