//! `std::io`'s files, directories and paths: what the seed implementation
//! took from Python's `os`, `os.path` and `shutil`, with their meanings.
//!
//! Path functions work on the text of a path, the POSIX way (`/` separates
//! components), as `os.path` does on Linux and macOS: `basename("a/b/")`
//! is `""`, `absolute_path` normalizes `..` without resolving links.
//! Functions that change the file system return `true`, as the seed's do;
//! every failure is an [`Error::Io`] naming the path.

use std::io::Write as _;
use std::path::Path;

use crate::io::io_error;
use crate::Error;

fn fail<'a>(function: &'a str, path: &'a str) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |e| io_error(function, path, e.to_string())
}

/// The process's working directory.
pub fn current_dir(function: &str) -> Result<String, Error> {
    let dir = std::env::current_dir().map_err(fail(function, "."))?;
    Ok(dir.to_string_lossy().into_owned())
}

/// Whether `path` starts at the root (`/`).
pub fn is_absolute(_function: &str, path: &str) -> Result<bool, Error> {
    Ok(path.starts_with('/'))
}

/// The names in directory `path` (not `.` and `..`), sorted so that a
/// program's output does not depend on the file system's order.
pub fn list_dir(function: &str, path: &str) -> Result<Vec<String>, Error> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(path).map_err(fail(function, path))? {
        let entry = entry.map_err(fail(function, path))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

/// Whether something exists at `path` (following links).
pub fn file_exists(_function: &str, path: &str) -> Result<bool, Error> {
    Ok(Path::new(path).exists())
}

/// Whether `path` is a regular file (following links).
pub fn is_file(_function: &str, path: &str) -> Result<bool, Error> {
    Ok(Path::new(path).is_file())
}

/// Whether `path` is a directory (following links).
pub fn is_dir(_function: &str, path: &str) -> Result<bool, Error> {
    Ok(Path::new(path).is_dir())
}

/// The whole text of the file at `path` (UTF-8).
pub fn read_file(function: &str, path: &str) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(fail(function, path))
}

/// Replaces the file at `path` with `content` (creating it).
pub fn write_file(function: &str, path: &str, content: &str) -> Result<bool, Error> {
    std::fs::write(path, content).map_err(fail(function, path))?;
    Ok(true)
}

/// Adds `content` at the end of the file at `path` (creating it).
pub fn append_file(function: &str, path: &str, content: &str) -> Result<bool, Error> {
    let mut file = std::fs::OpenOptions::new().append(true).create(true).open(path).map_err(fail(function, path))?;
    file.write_all(content.as_bytes()).map_err(fail(function, path))?;
    Ok(true)
}

/// Removes the file at `path`.
pub fn delete_file(function: &str, path: &str) -> Result<bool, Error> {
    std::fs::remove_file(path).map_err(fail(function, path))?;
    Ok(true)
}

/// Creates directory `path` and any missing parents; an error when `path`
/// already exists (as Python's `os.makedirs`).
pub fn create_dir(function: &str, path: &str) -> Result<bool, Error> {
    if Path::new(path).exists() {
        return Err(io_error(function, path, "already exists".to_string()));
    }
    std::fs::create_dir_all(path).map_err(fail(function, path))?;
    Ok(true)
}

/// Removes the empty directory `path`.
pub fn remove_dir(function: &str, path: &str) -> Result<bool, Error> {
    std::fs::remove_dir(path).map_err(fail(function, path))?;
    Ok(true)
}

/// Where a copy or move of `src` to `dst` lands: inside `dst` under the
/// same name when `dst` is a directory (as `shutil.copy` and `move`).
fn destination(src: &str, dst: &str) -> String {
    if Path::new(dst).is_dir() {
        join([dst, base_name(src)])
    } else {
        dst.to_string()
    }
}

/// Copies the file `src` to `dst` (a file path, or a directory to copy
/// into).
pub fn copy_file(function: &str, src: &str, dst: &str) -> Result<bool, Error> {
    std::fs::copy(src, destination(src, dst)).map_err(fail(function, src))?;
    Ok(true)
}

/// Moves `src` to `dst` (a path, or a directory to move into); a file is
/// copied and removed when a rename cannot cross file systems.
pub fn move_file(function: &str, src: &str, dst: &str) -> Result<bool, Error> {
    let to = destination(src, dst);
    if let Err(e) = std::fs::rename(src, &to) {
        if !Path::new(src).is_file() || std::fs::copy(src, &to).is_err() {
            return Err(io_error(function, src, e.to_string()));
        }
        std::fs::remove_file(src).map_err(fail(function, src))?;
    }
    Ok(true)
}

/// The size of the file at `path` in bytes.
pub fn file_size(function: &str, path: &str) -> Result<i64, Error> {
    let meta = std::fs::metadata(path).map_err(fail(function, path))?;
    Ok(meta.len() as i64)
}

/// The parts joined with `/`: a part that starts with `/` starts over, a
/// `/` is added only where the text so far does not end with one.
pub fn join_path(_function: &str, parts: &[String]) -> Result<String, Error> {
    Ok(join(parts))
}

fn join<S: AsRef<str>>(parts: impl IntoIterator<Item = S>) -> String {
    let mut out = String::new();
    for part in parts {
        let part = part.as_ref();
        if part.starts_with('/') {
            out.clear();
        } else if !out.is_empty() && !out.ends_with('/') {
            out.push('/');
        }
        out.push_str(part);
    }
    out
}

/// The offset just after the last `/` of `path` (0 without one).
fn last_sep(path: &str) -> usize {
    path.rfind('/').map_or(0, |i| i + 1)
}

/// What follows the last `/`.
fn base_name(path: &str) -> &str {
    &path[last_sep(path)..]
}

/// `(head, tail)`: `tail` is what follows the last `/`, `head` what comes
/// before it, without trailing slashes unless it is all slashes.
pub fn split_path(_function: &str, path: &str) -> Result<(String, String), Error> {
    let i = last_sep(path);
    let (head, tail) = path.split_at(i);
    let trimmed = head.trim_end_matches('/');
    let head = if trimmed.is_empty() { head } else { trimmed };
    Ok((head.to_string(), tail.to_string()))
}

/// What follows the last `/` (`""` for a path that ends with one).
pub fn basename(_function: &str, path: &str) -> Result<String, Error> {
    Ok(base_name(path).to_string())
}

/// What comes before the last `/`, as `split_path`'s head.
pub fn dirname(function: &str, path: &str) -> Result<String, Error> {
    Ok(split_path(function, path)?.0)
}

/// `path` without `.` components, doubled slashes and `..` after a name
/// (lexically, as `os.path.normpath`); `"."` for an empty result.
fn normalize(path: &str) -> String {
    if path.is_empty() {
        return ".".to_string();
    }
    // POSIX gives exactly two leading slashes a meaning of their own.
    let lead = if path.starts_with("//") && !path.starts_with("///") {
        "//"
    } else if path.starts_with('/') {
        "/"
    } else {
        ""
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if lead.is_empty() && parts.last().is_none_or(|p| *p == "..") => parts.push(part),
            // `..` of the root is the root.
            ".." => {
                parts.pop();
            }
            _ => parts.push(part),
        }
    }
    let out = format!("{lead}{}", parts.join("/"));
    if out.is_empty() {
        ".".to_string()
    } else {
        out
    }
}

/// `path` made absolute against the working directory and normalized.
pub fn absolute_path(function: &str, path: &str) -> Result<String, Error> {
    if path.starts_with('/') {
        return Ok(normalize(path));
    }
    let cwd = current_dir(function)?;
    Ok(normalize(&join([cwd.as_str(), path])))
}

/// The path that leads from directory `start` to `path` (both made
/// absolute first), with `..` for each of `start`'s components not shared.
pub fn relative_path(function: &str, path: &str, start: &str) -> Result<String, Error> {
    if path.is_empty() {
        return Err(io_error(function, path, "no path given".to_string()));
    }
    let (to, from) = (absolute_path(function, path)?, absolute_path(function, start)?);
    let to: Vec<&str> = to.split('/').filter(|p| !p.is_empty()).collect();
    let from: Vec<&str> = from.split('/').filter(|p| !p.is_empty()).collect();
    let common = to.iter().zip(&from).take_while(|(a, b)| a == b).count();
    let mut parts = vec![".."; from.len() - common];
    parts.extend(&to[common..]);
    Ok(if parts.is_empty() { ".".to_string() } else { parts.join("/") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|p| p.to_string()).collect()
    }

    // The expected values are what Python's `os.path` gives on Linux for
    // the same arguments, worked out by hand from its documented rules.
    #[test]
    fn path_text() {
        assert_eq!(join_path("f", &strs(&["a", "b", "c.txt"])).unwrap(), "a/b/c.txt");
        assert_eq!(join_path("f", &strs(&["a/", "b"])).unwrap(), "a/b");
        assert_eq!(join_path("f", &strs(&["a", "/etc", "x"])).unwrap(), "/etc/x");
        assert_eq!(join_path("f", &strs(&["a", ""])).unwrap(), "a/");
        assert_eq!(join_path("f", &[]).unwrap(), "");

        let split = |p: &str| split_path("f", p).unwrap();
        assert_eq!(split("a/b/c.txt"), ("a/b".into(), "c.txt".into()));
        assert_eq!(split("a/b/"), ("a/b".into(), "".into()));
        assert_eq!(split("c.txt"), ("".into(), "c.txt".into()));
        assert_eq!(split("/c.txt"), ("/".into(), "c.txt".into()));
        assert_eq!(split("//c.txt"), ("//".into(), "c.txt".into()));
        assert_eq!(split("a//b"), ("a".into(), "b".into()));

        assert_eq!(basename("f", "dir/file.ein").unwrap(), "file.ein");
        assert_eq!(basename("f", "dir/").unwrap(), "");
        assert_eq!(dirname("f", "dir/sub/file.ein").unwrap(), "dir/sub");
        assert_eq!(dirname("f", "file.ein").unwrap(), "");
        assert_eq!(dirname("f", "/").unwrap(), "/");

        assert_eq!(normalize("a/./b//c/../d"), "a/b/d");
        assert_eq!(normalize("../../a/.."), "../..");
        assert_eq!(normalize("/../a"), "/a");
        assert_eq!(normalize("a/.."), ".");
        assert_eq!(normalize("///a//b/"), "/a/b");
        assert_eq!(normalize("//a"), "//a");
        assert_eq!(absolute_path("f", "/x/y/../z").unwrap(), "/x/z");

        assert_eq!(relative_path("f", "/a/b/c", "/a/d").unwrap(), "../b/c");
        assert_eq!(relative_path("f", "/a", "/a").unwrap(), ".");
        assert_eq!(relative_path("f", "/a/b", "/").unwrap(), "a/b");
        assert_eq!(relative_path("f", "/", "/a/b").unwrap(), "../..");
        assert!(relative_path("f", "", "/a").is_err());
        assert!(is_absolute("f", "/a").unwrap() && !is_absolute("f", "a/b").unwrap());
    }

    #[test]
    fn relative_paths_start_at_the_working_directory() {
        let cwd = current_dir("f").unwrap();
        assert!(cwd.starts_with('/'));
        assert_eq!(absolute_path("f", "x/../y").unwrap(), format!("{}/y", cwd.trim_end_matches('/')));
        assert_eq!(relative_path("f", &format!("{cwd}/q/r"), ".").unwrap(), "q/r");
    }
}
