//! Shared helpers of the halo tests (`dist_overlap`, `dist_extend`): the
//! rows each rank holds and sends, derived from the blocks and the reads
//! (not from the runtime's plan), and a bitwise view of results.

use std::ops::Range;

/// The bits of each value: results compared bit for bit.
pub fn bits(a: impl IntoIterator<Item = f64>) -> Vec<u64> {
    a.into_iter().map(f64::to_bits).collect()
}

/// The rows this rank sends per exchange, derived from the reads: every
/// other rank with rows wants the `below` rows before its block and the
/// `above` rows after it (inside the axis), from whichever rank holds them.
pub fn rows_sent(lens: &[usize], rank: usize, below: usize, above: usize) -> usize {
    let start: Vec<usize> = (0..=lens.len()).map(|r| lens[..r].iter().sum()).collect();
    let n = start[lens.len()];
    let mine = start[rank]..start[rank + 1];
    let mut rows = 0;
    for q in (0..lens.len()).filter(|&q| q != rank && lens[q] > 0) {
        let wanted = start[q].saturating_sub(below)..start[q];
        let after = start[q + 1]..(start[q + 1] + above).min(n);
        rows += wanted.chain(after).filter(|g| mine.contains(g)).count();
    }
    rows
}

/// This rank's rows, for blocks of `lens`.
pub fn rows_of(lens: &[usize], rank: usize) -> Range<usize> {
    let start: usize = lens[..rank].iter().sum();
    start..start + lens[rank]
}

/// Every rank's block length, for each of the block shapes the halo tests
/// run over `size` ranks: balanced blocks of several sizes (thinner than a
/// halo included), uneven blocks, the first rank empty, the last rank
/// empty, and a rank of one row between thick ones.
pub fn block_shapes(size: usize) -> Vec<Vec<usize>> {
    let mut shapes: Vec<Vec<usize>> = [0usize, 1, 2, 3, 5, 9, 16]
        .into_iter()
        .map(|n| (0..size).map(|r| einlang::dist::block(n, r, size).len()).collect())
        .collect();
    shapes.extend([
        (0..size).map(|r| r * 3 + 1).collect::<Vec<_>>(),
        (0..size).map(|r| if r == 0 && size > 1 { 0 } else { 4 }).collect(),
        (0..size).map(|r| if r + 1 == size && size > 1 { 0 } else { 5 }).collect(),
        (0..size).map(|r| if r == 1 { 1 } else { 6 }).collect(),
    ]);
    shapes
}
