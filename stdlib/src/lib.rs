//! The einlang standard library: the Einlang source of every module of
//! `std`, embedded in this crate so that the compiler (einlang-core) builds
//! from its published package alone. The files live in `std/` beside this
//! crate's manifest; adding a module means adding its file there and a line
//! to `MODULES`.

/// A module of the standard library: its name under `std` and its source.
#[derive(Clone, Copy, Debug)]
pub struct Module {
    pub name: &'static str,
    pub source: &'static str,
}

/// Every module of `std`, in the order the compiler mounts them.
pub const MODULES: &[Module] = &[
    Module { name: "array", source: include_str!("../std/array.ein") },
    Module { name: "io", source: include_str!("../std/io.ein") },
    Module { name: "math", source: include_str!("../std/math.ein") },
    Module { name: "math_utils", source: include_str!("../std/math_utils.ein") },
    Module { name: "ml", source: include_str!("../std/ml.ein") },
    Module { name: "numerics", source: include_str!("../std/numerics.ein") },
];

#[cfg(test)]
mod tests {
    use super::MODULES;

    #[test]
    fn every_file_in_std_is_a_module() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("std");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .expect("std/ is beside the manifest")
            .map(|e| e.expect("readable entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".ein"))
            .collect();
        files.sort();
        let mut names: Vec<String> = MODULES.iter().map(|m| format!("{}.ein", m.name)).collect();
        names.sort();
        assert_eq!(files, names);
    }
}
