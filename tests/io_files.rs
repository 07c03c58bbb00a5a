//! `std::io`'s text files, directories and paths, checked against what
//! Rust's `std::fs` finds on disk and against path values worked out by hand
//! from POSIX (`os.path`) rules.

use einlang::einlang;

einlang! {
    use std::io::*;

    /// Builds `dir/notes/a.txt` by writing and appending, copies it into
    /// `dir`, and reports what the file system then holds.
    pub fn make_files(dir: str) -> (bool, str, i64, [str; ?], [str; ?], bool, bool) {
        let notes = join_path([dir, "notes"]);
        let made = create_dir(notes);
        let file = join_path([notes, "a.txt"]);
        let written = write_file(file, "first line\n") && append_file(file, "second\n");
        let copied = copy_file(file, dir);
        (made && written && copied, read_file(file), file_size(file), list_dir(dir), list_dir(notes),
         is_file(join_path([dir, "a.txt"])), is_dir(notes))
    }

    /// Moves `dir/a.txt` to `dir/b.txt`, then removes everything under
    /// `dir`; whether each step saw what it should.
    pub fn clean_up(dir: str) -> (bool, bool, bool, bool) {
        let moved = move_file("{dir}/a.txt", "{dir}/b.txt");
        let gone = !file_exists("{dir}/a.txt") && file_exists("{dir}/b.txt");
        let removed = delete_file("{dir}/b.txt") && delete_file("{dir}/notes/a.txt") && remove_dir("{dir}/notes");
        (moved, gone, removed, len(list_dir(dir)) == 0)
    }

    pub fn read(path: str) -> str { read_file(path) }
    pub fn size(path: str) -> i64 { file_size(path) }
    pub fn mkdir(path: str) -> bool { create_dir(path) }
    pub fn rmdir(path: str) -> bool { remove_dir(path) }

    pub fn pieces(path: str) -> (str, str, str, str) {
        let parts = split_path(path);
        (parts.0, parts.1, basename(path), dirname(path))
    }
    pub fn join(parts: [str; N]) -> str { join_path(parts) }
    pub fn relative(path: str, start: str) -> str { relative_path(path, start) }
    pub fn absolute(path: str) -> str { absolute_path(path) }
    pub fn rooted(path: str) -> bool { is_absolute(path) }
    pub fn here() -> (str, str, str) { (current_dir(), script_dir(), resolve_relative_to_script("w.npy")) }
}

mod from_file {
    einlang::include_ein!("tests/ein/paths.ein");
}

fn scratch(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("einlang-fs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.to_string_lossy().into_owned()
}

fn strings(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

#[test]
fn files_and_directories() {
    let dir = scratch("files");
    let (ok, text, len, top, notes, copied, is_dir) = make_files(&dir).unwrap();
    assert!(ok);
    let on_disk = std::fs::read_to_string(format!("{dir}/notes/a.txt")).unwrap();
    assert_eq!(on_disk, "first line\nsecond\n");
    assert_eq!(text, on_disk);
    assert_eq!(len, on_disk.len() as i64);
    assert_eq!(top, strings(&["a.txt", "notes"]));
    assert_eq!(notes, strings(&["a.txt"]));
    assert!(copied && is_dir);
    assert_eq!(std::fs::read_to_string(format!("{dir}/a.txt")).unwrap(), on_disk);

    assert_eq!(clean_up(&dir).unwrap(), (true, true, true, true));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir(&dir).unwrap();
}

#[test]
fn failures_are_errors_naming_the_path() {
    let dir = scratch("failures");
    let missing = format!("{dir}/missing.txt");
    for err in [read(&missing).unwrap_err(), size(&missing).unwrap_err(), rmdir(&missing).unwrap_err()] {
        match err {
            einlang::Error::Io { path, .. } => assert_eq!(path, missing),
            other => panic!("expected an I/O error, got {other:?}"),
        }
    }
    // Like `os.makedirs`, creating a directory that exists is an error.
    assert!(matches!(mkdir(&dir), Err(einlang::Error::Io { .. })));
    std::fs::write(format!("{dir}/x"), "").unwrap();
    assert!(rmdir(&dir).is_err(), "not empty");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn path_text_follows_posix() {
    let split = |p: &str| pieces(p).unwrap();
    assert_eq!(split("data/run/out.npy"), ("data/run".into(), "out.npy".into(), "out.npy".into(), "data/run".into()));
    assert_eq!(split("data/run/"), ("data/run".into(), "".into(), "".into(), "data/run".into()));
    assert_eq!(split("/top"), ("/".into(), "top".into(), "top".into(), "/".into()));
    assert_eq!(split("plain"), ("".into(), "plain".into(), "plain".into(), "".into()));

    assert_eq!(join(&strings(&["a", "b/", "c"])).unwrap(), "a/b/c");
    assert_eq!(join(&strings(&["a", "/abs", "c"])).unwrap(), "/abs/c");
    assert_eq!(relative("/x/y/z", "/x/w/v").unwrap(), "../../y/z");
    assert_eq!(relative("/x/./y/../y", "/x").unwrap(), "y");
    assert_eq!(absolute("/p/q/../r/./s").unwrap(), "/p/r/s");
    assert!(rooted("/p").unwrap() && !rooted("p/q").unwrap() && !rooted("").unwrap());
    let cwd = std::env::current_dir().unwrap().to_string_lossy().into_owned();
    assert_eq!(absolute("k/../m").unwrap(), format!("{cwd}/m"));
}

#[test]
fn script_dir_is_the_source_directory() {
    let manifest = env!("CARGO_MANIFEST_DIR");
    let (cwd, script, resolved) = here().unwrap();
    assert_eq!(cwd, std::env::current_dir().unwrap().to_string_lossy());
    // `einlang!` in a Rust file: the crate's directory.
    assert_eq!(script, manifest);
    assert_eq!(resolved, format!("{manifest}/w.npy"));
    // `include_ein!`: the directory of the `.ein` file.
    let (dir, resolved, absolute) = from_file::script_paths().unwrap();
    assert_eq!(dir, format!("{manifest}/tests/ein"));
    assert_eq!(resolved, format!("{manifest}/tests/ein/weights/w.npy"));
    assert_eq!(absolute, "/already/absolute");
}
