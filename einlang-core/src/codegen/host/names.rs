//! Rust spellings of IR names.
//!
//! The IR names variables and functions with unique identifiers, but not
//! necessarily ones Rust accepts as they are: a name may be a Rust keyword
//! (the source can spell `r#type`), a name the generated code needs
//! unshadowed (`Ok`, `Some`, `Result`, ...), or start with `__`, which this
//! back end reserves for its own temporaries (`__pos_i`, `__body`, `__rt`).
//! Such a name gets a trailing `_` (leading underscores dropped: `__x` is
//! `x_`); every other name is spelled as it is. An escaped spelling that
//! meets another name of its scope gets `_2`, `_3`, ... appended, so names
//! that differ in the IR differ in Rust.

use std::collections::HashSet;

use proc_macro2::Ident;

/// Rust keywords (strict, reserved and weak ones that cannot name a local)
/// and the prelude names generated code spells without a path.
const RESERVED: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for", "if", "impl", "in",
    "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self", "static", "struct", "super",
    "trait", "true", "type", "unsafe", "use", "where", "while", "async", "await", "dyn", "abstract", "become", "box",
    "do", "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen", "Ok", "Err",
    "Some", "None", "Result", "Option",
];

/// The Rust identifiers of the names of one scope (the variables of a
/// function, or the functions of a program), in order: a name that Rust
/// accepts as it is keeps its spelling, the others are escaped and kept
/// apart from every other name of the scope. None for a name that is no
/// identifier even after escaping (the IR validator rejects those).
pub(crate) fn rust_idents<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<Option<Ident>> {
    let names: Vec<&str> = names.into_iter().collect();
    let plain: Vec<Option<Ident>> = names.iter().map(|name| as_is(name)).collect();
    let mut taken: HashSet<String> =
        names.iter().zip(&plain).filter(|(_, p)| p.is_some()).map(|(n, _)| n.to_string()).collect();
    names
        .iter()
        .zip(plain)
        .map(|(name, plain)| {
            if plain.is_some() {
                return plain;
            }
            let base = escaped(name);
            let mut spelling = base.clone();
            let mut n = 2;
            while !taken.insert(spelling.clone()) {
                spelling = format!("{base}_{n}");
                n += 1;
            }
            syn::parse_str::<Ident>(&spelling).ok()
        })
        .collect()
}

/// The identifier of `name` spelled as it is, when Rust accepts it and it
/// is neither reserved nor starts with `__`.
fn as_is(name: &str) -> Option<Ident> {
    if name.starts_with("__") || RESERVED.contains(&name) || !name.chars().all(|c| c == '_' || c.is_alphanumeric()) {
        return None;
    }
    syn::parse_str::<Ident>(name).ok()
}

/// The escaped spelling of a name that cannot be spelled as it is (before
/// it is made unique).
fn escaped(name: &str) -> String {
    let core = if name.starts_with("__") || name == "_" { name.trim_start_matches('_') } else { name };
    match core.chars().next() {
        None => "v_".to_string(),
        Some(c) if c.is_ascii_digit() => format!("v{core}_"),
        Some(_) => format!("{core}_"),
    }
}

#[cfg(test)]
mod tests {
    use super::rust_idents;

    fn spell(names: &[&str]) -> Vec<String> {
        rust_idents(names.iter().copied()).into_iter().map(|id| id.map_or("-".to_string(), |i| i.to_string())).collect()
    }

    #[test]
    fn plain_names_keep_their_spelling() {
        assert_eq!(spell(&["x", "M", "i_2", "a__b", "_t"]), ["x", "M", "i_2", "a__b", "_t"]);
    }

    #[test]
    fn keywords_and_prelude_names_get_a_trailing_underscore() {
        assert_eq!(spell(&["type", "match", "Ok", "self", "x"]), ["type_", "match_", "Ok_", "self_", "x"]);
    }

    #[test]
    fn reserved_prefix_is_dropped() {
        assert_eq!(spell(&["__x", "__", "_", "__9"]), ["x_", "v_", "v__2", "v9_"]);
    }

    /// An escaped name never takes the spelling of another name, whichever
    /// comes first.
    #[test]
    fn escaped_names_stay_apart() {
        assert_eq!(spell(&["type", "type_", "type__2"]), ["type__3", "type_", "type__2"]);
        assert_eq!(spell(&["loop_", "loop", "__loop"]), ["loop_", "loop__2", "loop__3"]);
    }

    #[test]
    fn non_identifiers_have_no_spelling() {
        assert_eq!(spell(&["a-b", "a b"]), ["-", "-"]);
    }
}
