//! Parallel loops over the rows of an output buffer.

use crate::Error;
use rayon::prelude::*;

/// Below this many scalar operations a loop nest runs on the calling thread:
/// splitting smaller work across threads costs more than it saves.
pub const PAR_THRESHOLD: usize = 1 << 15;

/// Runs `body(row, chunk)` for every `row_len`-sized chunk of `out`, in
/// parallel when `work` (an estimate of scalar operations in the whole nest)
/// is above [`PAR_THRESHOLD`]. Stops at the first error.
pub fn for_each_row<T, F>(out: &mut [T], row_len: usize, work: usize, body: F) -> Result<(), Error>
where
    T: Send,
    F: Fn(usize, &mut [T]) -> Result<(), Error> + Sync + Send,
{
    if row_len == 0 || out.is_empty() {
        return Ok(());
    }
    if work >= PAR_THRESHOLD && out.len() / row_len > 1 {
        out.par_chunks_mut(row_len).enumerate().try_for_each(|(row, chunk)| body(row, chunk))
    } else {
        out.chunks_mut(row_len).enumerate().try_for_each(|(row, chunk)| body(row, chunk))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visits_every_row_in_both_modes() {
        for work in [0, PAR_THRESHOLD * 2] {
            let mut out = vec![0usize; 12];
            for_each_row(&mut out, 4, work, |row, chunk| {
                for (j, v) in chunk.iter_mut().enumerate() {
                    *v = row * 10 + j;
                }
                Ok(())
            })
            .unwrap();
            assert_eq!(out, vec![0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23]);
        }
    }

    #[test]
    fn first_error_is_returned() {
        let mut out = vec![0u8; 8];
        let r = for_each_row(&mut out, 2, 0, |row, _| {
            if row == 2 {
                Err(Error::Assert { function: "f".into(), message: "row 2".into() })
            } else {
                Ok(())
            }
        });
        assert!(r.is_err());
    }
}
