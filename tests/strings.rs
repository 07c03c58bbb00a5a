//! Vectors of strings (`[str; N]`): literals, `len`, element reads (a
//! missing one is an `Err`), comprehensions over them and of strings,
//! membership, parameters (`&[String]`) and results (`Vec<String>`), and
//! printing as the seed prints a string array.

use einlang::einlang;

einlang! {
    /// Words longer than `n` characters, and every word's length.
    pub fn long_words(words: [str; N], n: i64) -> ([str; ?], [i64; N]) {
        ([w | w in words, len(w) > n], [len(w) | w in words])
    }

    /// The label at `i` of a fixed list, and whether a word is in it.
    pub fn label(i: i64, word: str) -> (str, bool, i64) {
        let labels = ["tench", "goldfish", "great white shark"];
        (labels[i], word in labels, len(labels))
    }

    /// Two vectors of strings are equal when they hold the same strings in
    /// the same order.
    pub fn same(a: [str; N], b: [str; M]) -> (bool, bool, bool) {
        let ab = ["a", "b"];
        (a == b, a != b, a == ab)
    }

    /// A list built from the characters of a string, shown as text.
    pub fn letters(s: str) -> ([str; ?], str) {
        let l = [s[i] | i in 0..len(s)];
        (l, "{l}")
    }
}

mod program {
    einlang::einlang! {
        let words = ["hello", "world", "test", "example"];
        let lengths = [w.length | w in words];
        assert(lengths[0] == 5, "hello has 5 characters");
        assert("world" in words, "world is a word");
        print(words, lengths, typeof(words));
    }
}

#[test]
fn string_vectors() {
    let words: Vec<String> = ["alpha", "be", "gamma", "pi"].iter().map(|s| s.to_string()).collect();
    let (long, lens) = long_words(&words, 2).unwrap();
    assert_eq!(long, words.iter().filter(|w| w.chars().count() > 2).cloned().collect::<Vec<_>>());
    assert_eq!(lens.to_vec(), words.iter().map(|w| w.chars().count() as i64).collect::<Vec<_>>());

    assert_eq!(label(1, "tench").unwrap(), ("goldfish".to_string(), true, 3));
    assert_eq!(label(2, "shark").unwrap().1, false);
    assert!(matches!(label(3, "x"), Err(einlang::Error::Index { index: 3, len: 3, .. })));

    let ab: Vec<String> = vec!["a".into(), "b".into()];
    let ba: Vec<String> = vec!["b".into(), "a".into()];
    assert_eq!(same(&ab, &ab).unwrap(), (true, false, true));
    assert_eq!(same(&ab, &ba).unwrap(), (false, true, true));
    assert_eq!(same(&ba, &ab[..1]).unwrap(), (false, true, false));
    let (l, text) = letters("héllo").unwrap();
    assert_eq!(l, vec!["h", "é", "l", "l", "o"]);
    assert_eq!(text, "['h' 'é' 'l' 'l' 'o']");
    program::main().unwrap();
}
