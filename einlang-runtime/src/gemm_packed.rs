//! `f32` products on packed operands with micro-kernels of our own (a
//! child of `gemm`, which chooses them when the processor has AVX-512F, or
//! AVX2 with FMA), one driver for both instruction sets (`Isa`).
//!
//! The micro-kernel keeps a tile of the output in registers: with AVX-512,
//! 12 x 32 in 24 of the 32 vector registers; with AVX2, 6 x 16 in 12 of
//! the 16. For each term of the sum it loads two vectors of the packed
//! right operand and multiplies each by every broadcast element of the
//! packed left one (24 multiply-adds for 14 loads; 12 for 8), so the two
//! FMA ports, not the loads, bound it (matrixmultiply's 16 x 16 tile needs
//! 17 loads for 16). Each element's sum runs through the same blocks of
//! the sum in the same order whatever the tile, so both instruction sets
//! give the same bits. The sum is cut into blocks of `KC` terms; per block
//! the right operand is packed once into panels of a tile's columns (`KC
//! x 32`, in parallel), shared by every thread, and the rows are cut into
//! blocks (as many per thread), each running the micro-kernel over every
//! panel pair: its rows read in place when they are contiguous (as MLAS
//! does), else packed into panels of a tile's rows. With fewer row blocks
//! than two per thread (a few hundred rows or less), or not many more rows
//! than columns, the threads split the panels instead, each packing its
//! own as it goes, with no join per block of the sum. Panels are padded
//! with zeros; tiles at the edges, or written with a column stride other
//! than one, go through a buffer.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

#[cfg(target_arch = "x86_64")]
use crate::permute::transpose16;

use rayon::prelude::*;

/// The instruction set of the packed kernels (and of `dots`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Isa {
    /// AVX-512F: sixteen lanes, 32 vector registers.
    Avx512,
    /// AVX2 with FMA: eight lanes, 16 vector registers.
    Avx2,
}

/// The most rows of a micro-tile of either instruction set.
const MAX_MR: usize = Isa::Avx512.mr();

impl Isa {
    /// The widest the processor has, if any.
    pub(super) fn detected() -> Option<Isa> {
        if crate::cpu::has_avx512() {
            Some(Isa::Avx512)
        } else if crate::cpu::has_avx2_fma() {
            Some(Isa::Avx2)
        } else {
            None
        }
    }

    /// Rows of a micro-tile (`MR` in the comments below).
    pub(super) const fn mr(self) -> usize {
        match self {
            Isa::Avx512 => 12,
            Isa::Avx2 => 6,
        }
    }

    /// Columns of a micro-tile, two vectors (`NR` in the comments below).
    const fn nr(self) -> usize {
        match self {
            Isa::Avx512 => 32,
            Isa::Avx2 => 16,
        }
    }
}

/// Terms of the sum per block: a packed right panel (`KC x 32`, 32 KB
/// with AVX-512; 16 KB with AVX2) stays in the first-level cache while
/// the micro-kernel streams it.
const KC: usize = 256;
/// The most rows of a block (a packed left block, `MC x KC`, 144 KB, stays
/// in the second-level cache), a multiple of either tile's rows.
const MC: usize = 144;

/// A matrix as a pointer and strides (in elements).
#[derive(Clone, Copy)]
pub(super) struct Mat {
    pub ptr: *mut f32,
    pub rs: isize,
    pub cs: isize,
}

// SAFETY: threads read the operands and write disjoint blocks of the output.
unsafe impl Send for Mat {}
unsafe impl Sync for Mat {}

impl Mat {
    /// The element at `(i, j)`.
    ///
    /// # Safety
    ///
    /// `(i, j)` is inside the matrix.
    pub(super) unsafe fn at(self, i: usize, j: usize) -> *mut f32 {
        unsafe { self.ptr.offset(i as isize * self.rs + j as isize * self.cs) }
    }
}

thread_local! {
    /// Each thread's packing buffers, reused from call to call (a training
    /// loop's products allocate nothing after its first step): taken off
    /// the stack for the length of their use and given back, so a call
    /// that runs inside another on the same thread (rayon work-stealing)
    /// takes another one.
    static BUFFERS: std::cell::RefCell<Vec<Vec<f32>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A buffer of at least `len` values (their contents are whatever they
/// were: the callers write what they read).
fn take(len: usize) -> Vec<f32> {
    let mut v = BUFFERS.with(|b| b.borrow_mut().pop()).unwrap_or_default();
    if v.len() < len {
        v.resize(len, 0.0);
    }
    v
}

/// Gives a buffer from `take` back to this thread.
fn give(v: Vec<f32>) {
    BUFFERS.with(|b| b.borrow_mut().push(v));
}

/// `c = a · b` for `a: m x k`, `b: k x n` (`k > 0`), `c` written whole and
/// not read before, on up to `threads` of rayon's threads; with `scale`,
/// each finished element times it (applied once, by the last block of the
/// sum: the bits of the product followed by the multiplication).
///
/// # Safety
///
/// The processor has `isa`; `a` and `b` address `m x k` and `k x n`
/// readable elements, `c` `m x n` writable ones that nothing else accesses
/// meanwhile.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn sgemm(
    isa: Isa,
    m: usize,
    k: usize,
    n: usize,
    a: Mat,
    b: Mat,
    c: Mat,
    threads: usize,
    scale: Option<f32>,
) {
    let (tile_rows, tile_cols) = (isa.mr(), isa.nr());
    let panels = n.div_ceil(tile_cols);
    // Row blocks: a multiple of the threads, at most `MC` rows each, a
    // multiple of `MR` rows (but the last).
    let threads = threads.max(1);
    let per_thread = m.div_ceil(threads * MC).max(1);
    let blocks = (threads * per_thread).min(m.div_ceil(tile_rows));
    let rows = m.div_ceil(blocks).div_ceil(tile_rows) * tile_rows;
    let blocks = m.div_ceil(rows);
    // Pack `b[p0..p0 + kc, ..]` into panels of NR columns: panel `j`
    // holds `kc` rows of NR values, zeros past `n`.
    // SAFETY: `b` addresses `k x n` elements, `isa` as the caller vouches.
    let pack = |p0: usize, kc: usize, j: usize, panel: &mut [f32]| unsafe {
        pack_right(isa, b, p0, kc, n, j * tile_cols, panel)
    };
    let direct = a.cs == 1;
    // Row block `blk`'s tiles in panels `js` for the block of the sum from
    // `p0`, whose packed panels from panel `first_panel` on are
    // `right_block`.
    let run = |blk: usize, p0: usize, right_block: &[f32], first_panel: usize, js: std::ops::Range<usize>| {
        let kc = KC.min(k - p0);
        let first = p0 == 0;
        // The scale, by the last block only.
        let scale = if p0 + kc == k { scale } else { None };
        let (i0, i1) = (blk * rows, ((blk + 1) * rows).min(m));
        {
            let row_panels = (i1 - i0).div_ceil(tile_rows);
            let mut whole = take(row_panels * tile_rows * kc);
            let left = &mut whole[..row_panels * tile_rows * kc];
            // Pack `a[i0..i1, p0..p0 + kc]` into panels of MR rows:
            // panel `p` holds `kc` columns of MR values, zeros past i1.
            // As for `b`, along `a`'s contiguous axis. Rows in place
            // (`direct`: a unit column stride) are read where they
            // are, as MLAS does; only a last panel of fewer than MR
            // rows is packed then.
            for (p, panel) in left.chunks_mut(tile_rows * kc).enumerate() {
                let r0 = i0 + p * tile_rows;
                let mr = tile_rows.min(i1 - r0);
                if direct && mr == tile_rows {
                    continue;
                }
                if mr < tile_rows {
                    panel.fill(0.0);
                }
                if a.cs.unsigned_abs() <= a.rs.unsigned_abs() {
                    for ii in 0..mr {
                        for kk in 0..kc {
                            // SAFETY: row r0 + ii < m and p0 + kk < k are inside `a`.
                            panel[kk * tile_rows + ii] = unsafe { *a.at(r0 + ii, p0 + kk) };
                        }
                    }
                } else {
                    for kk in 0..kc {
                        for ii in 0..mr {
                            // SAFETY: as above.
                            panel[kk * tile_rows + ii] = unsafe { *a.at(r0 + ii, p0 + kk) };
                        }
                    }
                }
            }
            for (jp, rp) in right_block.chunks(kc * tile_cols).enumerate().skip(js.start - first_panel).take(js.len()) {
                let j0 = (first_panel + jp) * tile_cols;
                let nr = tile_cols.min(n - j0);
                for (ip, lp) in left.chunks(tile_rows * kc).enumerate() {
                    let r0 = i0 + ip * tile_rows;
                    let mr = tile_rows.min(i1 - r0);
                    // SAFETY: the tile (r0.., j0..) of mr x nr is inside
                    // `c`, in this block's rows; MR rows of `a` from r0
                    // (direct) have `kc` elements from p0; the caller
                    // vouches for `isa`.
                    unsafe {
                        if direct && mr == tile_rows {
                            tile(
                                isa,
                                true,
                                mr,
                                kc,
                                a.at(r0, p0),
                                a.rs,
                                rp.as_ptr(),
                                tile_cols,
                                c,
                                r0,
                                j0,
                                mr,
                                nr,
                                !first,
                                scale,
                            )
                        } else {
                            packed_tile(isa, kc, lp.as_ptr(), rp.as_ptr(), tile_cols, c, r0, j0, mr, nr, !first, scale)
                        }
                    };
                }
            }
            give(whole);
        }
    };
    if threads > 1 && m * n <= SMALL_OUT && k * panels * tile_cols <= WHOLE_RIGHT {
        // A small output: every block of the sum packed first (a task per
        // block and panel), then each row block, its panels in groups when
        // the row blocks are fewer than two per thread, runs through all of
        // them as one task: two joins of the threads per call, where the
        // loop below joins twice per KC terms (which cost more than the
        // arithmetic at 64 x 4096 x 64), and the threads share the panels
        // of a product of a few rows (36 rows: row blocks of 24 and 12).
        // Each element's sum runs through the same blocks in the same
        // order: the same bits.
        let mut right = take(k * panels * tile_cols);
        // Block `q` of the sum (rows `q * KC..`, `kc` of them) starts at
        // `q * KC * panels * NR`, its panel `j` `j * kc * NR` further on.
        let at = |p0: usize, j: usize| p0 * panels * tile_cols + j * KC.min(k - p0) * tile_cols;
        let whole = Shared(right.as_mut_ptr());
        (0..k.div_ceil(KC) * panels).into_par_iter().for_each(|t| {
            let (p0, j) = ((t / panels) * KC, t % panels);
            let kc = KC.min(k - p0);
            // SAFETY: task `t`'s panel, `kc * NR` values from `at(p0, j)`,
            // lies inside `right` (of `k * panels * NR`) and is no other
            // task's.
            let panel = unsafe { std::slice::from_raw_parts_mut(whole.get().add(at(p0, j)), kc * tile_cols) };
            pack(p0, kc, j, panel);
        });
        let packed = &right[..k * panels * tile_cols];
        let groups = if blocks < 2 * threads { (2 * threads).div_ceil(blocks).min(panels) } else { 1 };
        (0..blocks * groups).into_par_iter().for_each(|t| {
            let (blk, g) = (t / groups, t % groups);
            let js = panel_group(g, groups, panels);
            for p0 in (0..k).step_by(KC) {
                let kc = KC.min(k - p0);
                run(blk, p0, &packed[at(p0, 0)..at(p0, 0) + kc * panels * tile_cols], 0, js.clone());
            }
        });
        give(right);
        return;
    }
    if threads > 1 && panels > 1 && (blocks < 2 * threads || m <= ROWS_PER_COLUMN_FOR_PANELS * n) {
        // Fewer row blocks than two per thread (a batch of 256 rows through
        // a dense layer: one per thread), or not many more rows than
        // columns: the threads split the panels instead, each packing its
        // own panels block by block of the sum and running every row block
        // over them, with no join between the packing and the arithmetic
        // (the loop below joins twice per KC terms, and a thread that falls
        // behind, on the last and shorter row block or on this host's
        // noise, holds the other at each). What that costs is the left
        // operand read once per group rather than once: small beside the
        // joins while the rows are not many times the columns.
        // Each element's sum runs through the same blocks in the same
        // order: the same bits.
        let groups = (2 * threads).min(panels);
        (0..groups).into_par_iter().for_each(|g| {
            let js = panel_group(g, groups, panels);
            let mut right = take(KC.min(k) * js.len() * tile_cols);
            let mut p0 = 0;
            while p0 < k {
                let kc = KC.min(k - p0);
                let own = &mut right[..kc * js.len() * tile_cols];
                for (panel, j) in own.chunks_mut(kc * tile_cols).zip(js.clone()) {
                    pack(p0, kc, j, panel);
                }
                for blk in 0..blocks {
                    run(blk, p0, &right[..kc * js.len() * tile_cols], js.start, js.clone());
                }
                p0 += kc;
            }
            give(right);
        });
        return;
    }
    let mut right = take(KC.min(k) * panels * tile_cols);
    let mut p0 = 0;
    while p0 < k {
        let kc = KC.min(k - p0);
        let right_block = &mut right[..kc * panels * tile_cols];
        if threads > 1 {
            right_block.par_chunks_mut(kc * tile_cols).enumerate().for_each(|(j, panel)| pack(p0, kc, j, panel));
        } else {
            right_block.chunks_mut(kc * tile_cols).enumerate().for_each(|(j, panel)| pack(p0, kc, j, panel));
        }
        let right_block = &right[..kc * panels * tile_cols];
        if threads > 1 {
            (0..blocks).into_par_iter().for_each(|blk| run(blk, p0, right_block, 0, 0..panels));
        } else {
            (0..blocks).for_each(|blk| run(blk, p0, right_block, 0, 0..panels));
        }
        p0 += kc;
    }
    give(right);
}

/// Products of at most this many rows per column of the output split
/// their panels among the threads even when their row blocks would go
/// round (see `sgemm`). Measured on a 2-core AVX-512 Xeon (two threads,
/// rows x sum x columns, the panel split's time over the row split's):
/// 1000 x 777 x 1029 0.90x, 1024^3 0.90x, 300 x 2000 x 3000 0.75x,
/// 2000 x 512 x 512 0.97x, 4096 x 256 x 1024 and 6000 x 256 x 512 1.00x,
/// but 8192 x 256 x 128 1.12x and 20000 x 64 x 256 1.20x, where each
/// group reads the whole left operand for a few panels.
const ROWS_PER_COLUMN_FOR_PANELS: usize = 4;

/// The panels of group `g` of `groups` (of `panels`, cut as evenly as
/// they go) when threads share the panels of a product among them.
fn panel_group(g: usize, groups: usize, panels: usize) -> std::ops::Range<usize> {
    g * panels / groups..(g + 1) * panels / groups
}

/// The most values `sgemm` packs of its right operand at once, every
/// block of the sum (16 MiB): below it a product joins its threads twice
/// per call rather than twice per block of KC terms.
const WHOLE_RIGHT: usize = 1 << 22;

/// The most output elements (256 x 256) for which `sgemm` packs its whole
/// right operand first and runs each row block as one task; larger
/// outputs give each block of KC terms enough work for its joins.
const SMALL_OUT: usize = 1 << 16;

/// A buffer's start, shared by tasks that write disjoint parts of it.
#[derive(Clone, Copy)]
struct Shared(*mut f32);

// SAFETY: the tasks holding it write disjoint elements of one buffer that
// outlives them.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

impl Shared {
    fn get(self) -> *mut f32 {
        self.0
    }
}

/// Packs columns `j0..j0 + NR` of rows `p0..p0 + kc` of `b` (`n` columns)
/// into `panel` (`kc` rows of NR values, zeros past `n`; NR the columns of
/// `isa`'s tile). The loops follow `b`'s contiguous axis, so the reads
/// stream (a transposed operand, `k^T` of attention scores, is read along
/// its rows and written with a stride inside the panel, or with AVX-512
/// gathered sixteen columns at a time).
///
/// # Safety
///
/// The processor has `isa`; rows `p0..p0 + kc` and columns `j0..min(j0 +
/// NR, n)` are inside `b`; `panel` holds `kc * NR` values.
#[cfg(target_arch = "x86_64")]
unsafe fn pack_right(isa: Isa, b: Mat, p0: usize, kc: usize, n: usize, j0: usize, panel: &mut [f32]) {
    let tile_cols = isa.nr();
    let cols = tile_cols.min(n - j0);
    if cols < tile_cols {
        panel.fill(0.0);
    }
    if isa == Isa::Avx512 && cols == tile_cols && b.rs == 1 && gathers(b.cs) {
        // Whole panels of a transposed operand (`k^T`): sixteen columns
        // per gather, a row of the panel per term.
        // SAFETY: the panel's 32 columns from j0 and rows p0..p0 + kc are
        // inside `b`; AVX-512F as the caller vouches.
        unsafe { gather_panel(b, p0, kc, j0, panel) };
    } else if b.rs.unsigned_abs() < b.cs.unsigned_abs() {
        for jj in 0..cols {
            for kk in 0..kc {
                // SAFETY: row p0 + kk < k and column j0 + jj < n are inside `b`.
                panel[kk * tile_cols + jj] = unsafe { *b.at(p0 + kk, j0 + jj) };
            }
        }
    } else if b.cs == 1 {
        for kk in 0..kc {
            // SAFETY: as above; the row's `cols` elements are contiguous.
            let src = unsafe { std::slice::from_raw_parts(b.at(p0 + kk, j0).cast_const(), cols) };
            panel[kk * tile_cols..kk * tile_cols + cols].copy_from_slice(src);
        }
    } else {
        for kk in 0..kc {
            let dst = &mut panel[kk * tile_cols..kk * tile_cols + cols];
            for (jj, d) in dst.iter_mut().enumerate() {
                // SAFETY: as above.
                *d = unsafe { *b.at(p0 + kk, j0 + jj) };
            }
        }
    }
}

/// Whether a column stride lets `gather_panel` reach sixteen columns with
/// 32-bit offsets (in bytes).
fn gathers(cs: isize) -> bool {
    cs > 0 && cs.checked_mul(4 * 16).is_some_and(|v| v <= i32::MAX as isize)
}

/// Packs the `kc x NR` panel of `b` at `(p0, j0)` (contiguous columns:
/// `b.rs == 1`, `gathers(b.cs)`) into `panel`: whole runs of sixteen terms
/// as 16 x 16 blocks, sixteen contiguous loads transposed in registers
/// (`transpose16`), the rest row by row, sixteen columns per gather.
///
/// # Safety
///
/// AVX-512F; the panel is inside `b`, `panel` holds `kc * NR` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn gather_panel(b: Mat, p0: usize, kc: usize, j0: usize, panel: &mut [f32]) {
    const NR: usize = Isa::Avx512.nr();
    let cs = b.cs as i32;
    let steps = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let offsets = _mm512_mullo_epi32(steps, _mm512_set1_epi32(cs));
    let out = panel[..kc * NR].as_mut_ptr();
    let whole = kc / 16 * 16;
    for k0 in (0..whole).step_by(16) {
        for half in [0, 16] {
            // SAFETY: column j0 + half + i (i < 16) holds terms p0 + k0 ..
            // p0 + k0 + 16, contiguous (`b.rs == 1`), inside `b`; the
            // stores are rows k0..k0 + 16 of the panel, columns half..half + 16.
            unsafe {
                let rows: [__m512; 16] =
                    std::array::from_fn(|i| _mm512_loadu_ps(b.at(p0 + k0, j0 + half + i).cast_const()));
                let cols = transpose16(rows);
                for (c, v) in cols.iter().enumerate() {
                    _mm512_storeu_ps(out.add((k0 + c) * NR + half), *v);
                }
            }
        }
    }
    for kk in whole..kc {
        // SAFETY: columns j0..j0 + NR of row p0 + kk are inside `b`
        // (offsets up to 31 columns, which `gathers` keeps in i32).
        unsafe {
            let lo = _mm512_i32gather_ps::<4>(offsets, b.at(p0 + kk, j0).cast_const());
            let hi = _mm512_i32gather_ps::<4>(offsets, b.at(p0 + kk, j0 + 16).cast_const());
            _mm512_storeu_ps(out.add(kk * NR), lo);
            _mm512_storeu_ps(out.add(kk * NR + 16), hi);
        }
    }
}

/// `c = a · b` for at most MR rows (`m <= MR`, `k > 0`; `gemm` gives it
/// eight or more) and a right
/// operand with contiguous rows (`b.cs == 1`): each element of `b` serves
/// every row once, so `b` is read in place, never packed (but a last
/// panel of fewer than NR columns), streamed once from memory; the rows of
/// `a` are packed once, zeros past `m`; the panels of columns run in
/// parallel on up to `threads` threads (a batch of one to twelve through a
/// dense layer); with `scale`, as `sgemm`.
///
/// # Safety
///
/// As `sgemm`, and `m <= MR` (`isa`'s tile rows), `b.cs == 1`.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn skinny(
    isa: Isa,
    m: usize,
    k: usize,
    n: usize,
    a: Mat,
    b: Mat,
    c: Mat,
    threads: usize,
    scale: Option<f32>,
) {
    let (tile_rows, tile_cols) = (isa.mr(), isa.nr());
    let mut whole = take(k * tile_rows);
    let left = &mut whole[..k * tile_rows];
    if m < tile_rows {
        left.fill(0.0);
    }
    for ii in 0..m {
        for kk in 0..k {
            // SAFETY: (ii, kk) is inside `a`.
            left[kk * tile_rows + ii] = unsafe { *a.at(ii, kk) };
        }
    }
    let run = |jp: usize| {
        let j0 = jp * tile_cols;
        let nr = tile_cols.min(n - j0);
        // SAFETY: the m x nr tile at (0, j0) is inside `c`; columns j0..j0 +
        // NR of every row of `b` are inside it when nr == NR; `isa`.
        unsafe {
            if nr == tile_cols {
                packed_tile(isa, k, left.as_ptr(), b.at(0, j0), b.rs as usize, c, 0, j0, m, nr, false, scale);
            } else {
                let mut buf = take(k * tile_cols);
                let panel = &mut buf[..k * tile_cols];
                panel.fill(0.0);
                for kk in 0..k {
                    for jj in 0..nr {
                        panel[kk * tile_cols + jj] = *b.at(kk, j0 + jj);
                    }
                }
                packed_tile(isa, k, left.as_ptr(), panel.as_ptr(), tile_cols, c, 0, j0, m, nr, false, scale);
                give(buf);
            }
        }
    };
    let panels = n.div_ceil(tile_cols);
    if threads > 1 {
        (0..panels).into_par_iter().for_each(run);
    } else {
        (0..panels).for_each(run);
    }
    give(whole);
}

/// The micro-kernel over a packed left panel of `mr` rows (zeros past
/// them), computing only as many of its rows as hold some (`tile`): a
/// product of 256 rows ends in a panel of 4, which the 12-row tile
/// computed as 12.
///
/// # Safety
///
/// As `tile`.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
unsafe fn packed_tile(
    isa: Isa,
    kc: usize,
    a: *const f32,
    b: *const f32,
    b_step: usize,
    c: Mat,
    r0: usize,
    j0: usize,
    mr: usize,
    nr: usize,
    add: bool,
    scale: Option<f32>,
) {
    // SAFETY: as the caller vouches.
    unsafe { tile(isa, false, mr, kc, a, 0, b, b_step, c, r0, j0, mr, nr, add, scale) }
}

/// `isa`'s micro-kernel (`tile_kernel!`: `tile512`, `tile256`) over the
/// first `R` rows of its left panel, `R` the fewest of its forms that
/// holds `rows` (AVX-512: 4, 8 or 12; AVX2: 2, 4 or 6); `DIRECT` from
/// `direct`.
///
/// # Safety
///
/// As the kernel's, `mr <= rows <= isa.mr()`.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn tile(
    isa: Isa,
    direct: bool,
    rows: usize,
    kc: usize,
    a: *const f32,
    a_rs: isize,
    b: *const f32,
    b_step: usize,
    c: Mat,
    r0: usize,
    j0: usize,
    mr: usize,
    nr: usize,
    add: bool,
    scale: Option<f32>,
) {
    macro_rules! run {
        ($kernel:ident, $rows:expr) => {
            if direct {
                $kernel::<true, { $rows }>(kc, a, a_rs, b, b_step, c, r0, j0, mr, nr, add, scale)
            } else {
                $kernel::<false, { $rows }>(kc, a, a_rs, b, b_step, c, r0, j0, mr, nr, add, scale)
            }
        };
    }
    // SAFETY: as the caller vouches; each form's rows hold `rows`.
    unsafe {
        match (isa, rows) {
            (Isa::Avx512, 0..=4) => run!(tile512, 4),
            (Isa::Avx512, 5..=8) => run!(tile512, 8),
            (Isa::Avx512, _) => run!(tile512, 12),
            (Isa::Avx2, 0..=2) => run!(tile256, 2),
            (Isa::Avx2, 3..=4) => run!(tile256, 4),
            (Isa::Avx2, _) => run!(tile256, 6),
        }
    }
}

/// Defines a micro-kernel `$name::<DIRECT, R>` for the instruction set
/// `isa` (compiled with `$features`, vectors of `$lanes` lanes of type
/// `$v`, through the given intrinsics): over the first `R` (at most MR, at
/// least `mr`) rows of its left panel, the `mr x nr` tile of `c` at `(r0,
/// j0)` becomes (or, with `add`, gains) the product of a left panel (`kc`
/// columns of MR: a packed one, or with `DIRECT` `R` rows of `kc`
/// contiguous elements, `a_rs` apart) and a right one (`kc` rows of NR =
/// 2 x `$lanes` contiguous values, `b_step` apart: NR when packed), then
/// (with `scale`) times `scale`: `(c + a · b) * scale`, each operation
/// rounded, as the unscaled product followed by the multiplication. Each
/// element's sum is the same chain of fused multiply-adds in either
/// instruction set: the same bits.
macro_rules! tile_kernel {
    ($name:ident, $isa:expr, $features:literal, $v:ty, $lanes:literal,
     $zero:ident, $load:ident, $store:ident, $set1:ident, $fmadd:ident, $add:ident, $mul:ident) => {
        /// A micro-kernel (`tile_kernel!`).
        ///
        /// # Safety
        ///
        /// The processor has the kernel's instruction set; the panels
        /// hold those values; the tile is inside `c` and was written
        /// before when `add`.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $name<const DIRECT: bool, const R: usize>(
            kc: usize,
            a: *const f32,
            a_rs: isize,
            b: *const f32,
            b_step: usize,
            c: Mat,
            r0: usize,
            j0: usize,
            mr: usize,
            nr: usize,
            add: bool,
            scale: Option<f32>,
        ) {
            const MR: usize = $isa.mr();
            const NR: usize = $isa.nr();
            let mut lo: [$v; R] = [$zero(); R];
            let mut hi: [$v; R] = [$zero(); R];
            let (mut a, mut b) = (a, b);
            for _ in 0..kc {
                // SAFETY: `kc` steps of MR and NR values stay inside the panels.
                unsafe {
                    let b0 = $load(b);
                    let b1 = $load(b.add($lanes));
                    for i in 0..R {
                        let ai = $set1(if DIRECT { *a.offset(i as isize * a_rs) } else { *a.add(i) });
                        lo[i] = $fmadd(ai, b0, lo[i]);
                        hi[i] = $fmadd(ai, b1, hi[i]);
                    }
                    a = a.add(if DIRECT { 1 } else { MR });
                    b = b.add(b_step);
                }
            }
            if mr == R && nr == NR && c.cs == 1 {
                for i in 0..R {
                    // SAFETY: row r0 + i, columns j0..j0 + NR are inside
                    // `c`, contiguous.
                    unsafe {
                        let p = c.at(r0 + i, j0);
                        let (mut v0, mut v1) = (lo[i], hi[i]);
                        if add {
                            v0 = $add(v0, $load(p));
                            v1 = $add(v1, $load(p.add($lanes)));
                        }
                        if let Some(s) = scale {
                            let s = $set1(s);
                            v0 = $mul(v0, s);
                            v1 = $mul(v1, s);
                        }
                        $store(p, v0);
                        $store(p.add($lanes), v1);
                    }
                }
                return;
            }
            let mut buf = [0.0f32; MR * NR];
            for i in 0..R {
                // SAFETY: row i of the buffer holds NR values.
                unsafe {
                    $store(buf.as_mut_ptr().add(i * NR), lo[i]);
                    $store(buf.as_mut_ptr().add(i * NR + $lanes), hi[i]);
                }
            }
            // SAFETY: as the caller vouches.
            unsafe { store_edge(&buf, NR, c, r0, j0, mr, nr, add, scale) };
        }
    };
}

tile_kernel!(
    tile512,
    Isa::Avx512,
    "avx512f",
    __m512,
    16,
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_add_ps,
    _mm512_mul_ps
);
tile_kernel!(
    tile256,
    Isa::Avx2,
    "avx2,fma",
    __m256,
    8,
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_add_ps,
    _mm256_mul_ps
);

/// Stores the `mr x nr` corner of a micro-kernel's tile, spilled into
/// `buf` (rows `nr_buf` apart), at `(r0, j0)` of `c` element by element:
/// added to what is there with `add`, then times `scale`.
///
/// # Safety
///
/// The tile is inside `c` and was written before when `add`.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn store_edge(
    buf: &[f32],
    nr_buf: usize,
    c: Mat,
    r0: usize,
    j0: usize,
    mr: usize,
    nr: usize,
    add: bool,
    scale: Option<f32>,
) {
    for i in 0..mr {
        for j in 0..nr {
            // SAFETY: (r0 + i, j0 + j) is inside the tile, so inside `c`.
            unsafe {
                let p = c.at(r0 + i, j0 + j);
                let v = buf[i * nr_buf + j];
                let v = if add { *p + v } else { v };
                p.write(match scale {
                    Some(s) => v * s,
                    None => v,
                });
            }
        }
    }
}

/// One head of attention in one pass over blocks of MR rows:
/// `out[i, c] = (sum[j](e[i, j] * v[j, c])) / z[i]` with `s = q · kt`
/// (times `scale`, when there is one), `e[i, j] = exp(s[i, j] - max[j]
/// s[i, j])` and `z[i] = sum[j](e[i, j])`, for `q: m x d`, `kt: d x nk`,
/// `v: nk x dv` (`d, nk > 0`). `kt` and `v` are packed once into panels
/// of NR columns; then each block's scores are computed by the
/// micro-kernel into a buffer of MR rows, made `e` in place with their
/// sums (`super::softmax_row`), multiplied by `v`'s panels while they are
/// in the cache, divided by the sums and stored. The bits are those of
/// `sgemm` for `s` (the same blocks of the sum, the scale applied after
/// the last), the softmax row, `sgemm` for `e · v` and the division, each
/// as its own pass: every element's arithmetic is the same, in the same
/// order. Row blocks run in parallel on up to `threads` threads.
///
/// # Safety
///
/// The processor has `isa` (with AVX-512F also AVX-512BW, DQ, VL, AVX2
/// and FMA); `q`, `kt` and `v` address readable matrices of those
/// extents, `out` `m x dv` writable elements that nothing else accesses
/// meanwhile.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn attention(
    isa: Isa,
    [m, d, nk, dv]: [usize; 4],
    q: Mat,
    kt: Mat,
    v: Mat,
    scale: Option<f32>,
    out: Mat,
    threads: usize,
) {
    let (tile_rows, tile_cols) = (isa.mr(), isa.nr());
    let (ps, pv) = (nk.div_ceil(tile_cols), dv.div_ceil(tile_cols));
    let mut kpack = take(d * ps * tile_cols);
    let mut vpack = take(nk * pv * tile_cols);
    // SAFETY: the extents and `isa` as the caller vouches.
    unsafe {
        pack_whole(isa, kt, d, nk, &mut kpack[..d * ps * tile_cols]);
        pack_whole(isa, v, nk, dv, &mut vpack[..nk * pv * tile_cols]);
    }
    let (kp, vp) = (&kpack[..d * ps * tile_cols], &vpack[..nk * pv * tile_cols]);
    let blocks = m.div_ceil(tile_rows);
    // SAFETY: block `blk`'s rows are inside `q` and `out`, disjoint from
    // every other block's; the packed panels as `pack_whole` made them.
    let run = |blk: usize| unsafe {
        match isa {
            Isa::Avx512 => attention_block512(blk, [m, d, nk, dv], q, kp, vp, scale, out),
            Isa::Avx2 => attention_block256(blk, [m, d, nk, dv], q, kp, vp, scale, out),
        }
    };
    if threads > 1 && blocks > 1 {
        (0..blocks).into_par_iter().for_each(run);
    } else {
        (0..blocks).for_each(run);
    }
    give(kpack);
    give(vpack);
}

/// Packs all of `b` (`k x n`) into blocks of KC rows, each a run of
/// panels of NR columns (`pack_right`, NR the columns of `isa`'s tile):
/// block `p0` from `p0 * panels * NR`, its panel `j` from there plus `j *
/// kc * NR`.
///
/// # Safety
///
/// The processor has `isa`; `b` addresses `k x n` readable elements;
/// `packed` holds `k * n.div_ceil(NR) * NR` values.
#[cfg(target_arch = "x86_64")]
unsafe fn pack_whole(isa: Isa, b: Mat, k: usize, n: usize, packed: &mut [f32]) {
    let tile_cols = isa.nr();
    let panels = n.div_ceil(tile_cols);
    let mut p0 = 0;
    while p0 < k {
        let kc = KC.min(k - p0);
        let block = &mut packed[p0 * panels * tile_cols..(p0 + kc) * panels * tile_cols];
        for (j, panel) in block.chunks_mut(kc * tile_cols).enumerate() {
            // SAFETY: as the caller vouches.
            unsafe { pack_right(isa, b, p0, kc, n, j * tile_cols, panel) };
        }
        p0 += kc;
    }
}

/// `attention_block` with AVX-512.
///
/// # Safety
///
/// As `attention_block` with `Isa::Avx512`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn attention_block512(
    blk: usize,
    extents: [usize; 4],
    q: Mat,
    kp: &[f32],
    vp: &[f32],
    scale: Option<f32>,
    out: Mat,
) {
    // SAFETY: as the caller vouches.
    unsafe { attention_block::<true>(blk, extents, q, kp, vp, scale, out) }
}

/// `attention_block` with AVX2.
///
/// # Safety
///
/// As `attention_block` with `Isa::Avx2`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn attention_block256(
    blk: usize,
    extents: [usize; 4],
    q: Mat,
    kp: &[f32],
    vp: &[f32],
    scale: Option<f32>,
    out: Mat,
) {
    // SAFETY: as the caller vouches.
    unsafe { attention_block::<false>(blk, extents, q, kp, vp, scale, out) }
}

/// Rows `blk * MR ..` (at most MR) of `attention`, with AVX-512's tiles
/// (`AVX512`) or AVX2's.
///
/// # Safety
///
/// As `attention` with that instruction set, `kp` and `vp` packed by
/// `pack_whole` from `kt` and `v` for it.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn attention_block<const AVX512: bool>(
    blk: usize,
    [m, d, nk, dv]: [usize; 4],
    q: Mat,
    kp: &[f32],
    vp: &[f32],
    scale: Option<f32>,
    out: Mat,
) {
    let isa = if AVX512 { Isa::Avx512 } else { Isa::Avx2 };
    let (tile_rows, tile_cols) = (isa.mr(), isa.nr());
    let (ps, pv) = (nk.div_ceil(tile_cols), dv.div_ceil(tile_cols));
    let (lds, ldy) = (ps * tile_cols, pv * tile_cols);
    let r0 = blk * tile_rows;
    let mr = tile_rows.min(m - r0);
    let mut sbuf = take(tile_rows * lds);
    let mut ybuf = take(tile_rows * ldy);
    let mut lbuf = take(tile_rows * KC.min(d));
    let sc = Mat { ptr: sbuf.as_mut_ptr(), rs: lds as isize, cs: 1 };
    let yc = Mat { ptr: ybuf.as_mut_ptr(), rs: ldy as isize, cs: 1 };
    // The scores, as `sgemm` computes them: a tile's rows of `q` in place
    // when they are whole and contiguous, else a packed panel of `mr` rows.
    let direct = q.cs == 1 && mr == tile_rows;
    let mut p0 = 0;
    while p0 < d {
        let kc = KC.min(d - p0);
        let last = if p0 + kc == d { scale } else { None };
        if !direct {
            let panel = &mut lbuf[..tile_rows * kc];
            if mr < tile_rows {
                panel.fill(0.0);
            }
            for ii in 0..mr {
                for kk in 0..kc {
                    // SAFETY: row r0 + ii < m and column p0 + kk < d are inside `q`.
                    panel[kk * tile_rows + ii] = unsafe { *q.at(r0 + ii, p0 + kk) };
                }
            }
        }
        for jp in 0..ps {
            let nr = tile_cols.min(nk - jp * tile_cols);
            // SAFETY: panel `jp` of block `p0` holds `kc * NR` values; the
            // tile (0, jp * NR) of mr x nr is inside the buffer of MR rows
            // of `lds >= nk` values; MR rows of `q` from r0 when direct.
            unsafe {
                let rp = kp.as_ptr().add(p0 * ps * tile_cols + jp * kc * tile_cols);
                let j0 = jp * tile_cols;
                if direct {
                    tile(isa, true, mr, kc, q.at(r0, p0), q.rs, rp, tile_cols, sc, 0, j0, mr, nr, p0 > 0, last);
                } else {
                    packed_tile(isa, kc, lbuf.as_ptr(), rp, tile_cols, sc, 0, j0, mr, nr, p0 > 0, last);
                }
            }
        }
        p0 += kc;
    }
    let mut sums = [0.0f32; MAX_MR];
    for (r, z) in sums.iter_mut().enumerate().take(mr) {
        *z = super::softmax_row::<AVX512>(&mut sbuf[r * lds..r * lds + nk]);
    }
    // `e · v` over the rows of the buffer in place, as many as hold some
    // (as `packed_tile`; rows past `mr`, if any, are computed from stale
    // values and never stored).
    let mut p0 = 0;
    while p0 < nk {
        let kc = KC.min(nk - p0);
        for jp in 0..pv {
            let nr = tile_cols.min(dv - jp * tile_cols);
            // SAFETY: MR rows of the buffer have `kc` values from p0; panel
            // `jp` of block `p0` of `vp`; the tile is inside `ybuf`.
            unsafe {
                let (a, rp) = (sbuf.as_ptr().add(p0), vp.as_ptr().add(p0 * pv * tile_cols + jp * kc * tile_cols));
                let (ld, j0, add) = (lds as isize, jp * tile_cols, p0 > 0);
                tile(isa, true, mr, kc, a, ld, rp, tile_cols, yc, 0, j0, mr, nr, add, None);
            }
        }
        p0 += kc;
    }
    for (r, z) in sums.iter().enumerate().take(mr) {
        let row = &ybuf[r * ldy..r * ldy + dv];
        for (c, y) in row.iter().enumerate() {
            // SAFETY: (r0 + r, c) is inside `out`, in this block's rows.
            unsafe { out.at(r0 + r, c).write(*y / *z) };
        }
    }
    give(sbuf);
    give(ybuf);
    give(lbuf);
}
