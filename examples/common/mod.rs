//! Shared by the MNIST examples: reading the PGM samples.

use std::error::Error;
use std::path::{Path, PathBuf};

use einlang::ndarray::{Array1, Array2, Array3, Axis};

/// Reads a binary (`P5`) PGM image with 8-bit pixels.
pub fn read_pgm(path: &Path) -> Result<Array2<u8>, Box<dyn Error>> {
    let bytes = std::fs::read(path)?;
    // Header: magic, width, height, maxval, separated by whitespace
    // (comments start with `#`), then one whitespace byte, then pixels.
    let mut fields = Vec::new();
    let mut i = 0;
    while fields.len() < 4 {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i < bytes.len() && bytes[i] == b'#' {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if start == i {
            return Err(format!("{}: truncated PGM header", path.display()).into());
        }
        fields.push(std::str::from_utf8(&bytes[start..i])?.to_string());
    }
    if fields[0] != "P5" || fields[3] != "255" {
        return Err(format!("{}: only 8-bit binary PGM (P5) is supported", path.display()).into());
    }
    let (w, h): (usize, usize) = (fields[1].parse()?, fields[2].parse()?);
    let pixels = bytes.get(i + 1..i + 1 + w * h).ok_or_else(|| format!("{}: truncated PGM data", path.display()))?;
    Ok(Array2::from_shape_vec((h, w), pixels.to_vec())?)
}

/// The `.pgm` files of a directory, sorted by name.
pub fn pgm_files(dir: &Path) -> Result<Vec<PathBuf>, Box<dyn Error>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pgm"))
        .collect();
    files.sort();
    Ok(files)
}

/// Classifies every sample of `dir` with `classify` (which gets a 1x28x28
/// image scaled to [0, 1] and returns the digit and the logits), printing a
/// line per image and then all the digits.
pub fn classify_samples(
    dir: &Path,
    classify: impl Fn(&Array3<f32>) -> Result<(i64, Array1<f32>), Box<dyn Error>>,
) -> Result<(), Box<dyn Error>> {
    let mut predictions = Vec::new();
    for file in pgm_files(dir)? {
        let img = read_pgm(&file)?.mapv(|p| p as f32 / 255.0).insert_axis(Axis(0));
        let (digit, logits) = classify(&img)?;
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        println!("{name}: {digit}  (logits {logits:.2})");
        predictions.push(digit.to_string());
    }
    println!("{}", predictions.join(" "));
    Ok(())
}
