//! Axis permutations as blocked copies: `y[j, i] = x[i, j]`, or any
//! reordering of any rank's axes.
//!
//! A definition that reads a tensor at its own indices in another order
//! walks the source across its rows: point by point, every read touches a
//! new cache line. Here the output (standard layout, its last axis
//! contiguous) is written in square tiles of the two axes that are
//! contiguous in the output and in the source: within a tile the source's
//! lines and the output's lines both stay in cache, so every line loaded
//! serves a whole tile's width. Tiles (and the other axes' positions) are
//! split across threads. A permutation that keeps the last axis last
//! copies whole rows.

use std::mem::MaybeUninit;

use ndarray::{Array, ArrayView, Dimension, IntoDimension, IxDyn, Slice};
use rayon::prelude::*;

use crate::par::{check_size, parallel_work};
use crate::Error;

/// The side of a tile, in elements: 64 x 64 `f32` is 16 KiB of each side,
/// and each row of either side moves in runs of 256 bytes. The squares
/// inside a tile (`square_side`) consume whole cache lines, so the tile
/// sets how long the runs are that the prefetchers follow; tiles of 32
/// (runs of 128 bytes) took 1.1-1.7x as long on a 2-core Zen 5, the two
/// alternated in one binary three times: a 4096^2 transpose 5.55-5.79
/// against 4.62-5.28 ms, `[n, c, h, w]` to `[n, h, w, c]` of 16 x 64 x 56
/// x 56 0.59-0.65 against 0.35-0.43 ms, the reverse of 1024 x 56 x 56
/// 0.83-0.86 against 0.70-0.74 ms (minima of 101; the other way round
/// between channels 0.41-0.67 against 0.36-0.43).
const TILE: usize = 64;

/// The side of a block of tiles: its source and output lines lie on at
/// most 2 x 256 pages, which the TLB holds.
const BLOCK: usize = 256;

/// The fewest elements a task of the row copy moves (16 KiB of `f32`).
const ROW_TASK: usize = 4096;

/// The longest piece of a row one task copies (256 KiB of `f32`).
const PIECE: usize = 1 << 16;

/// `out[o] = x[o permuted]` for `o` in `shape`: output axis `k` reads the
/// source's axis `axes[k]`, from 0 (the output is the leading block of the
/// permuted source). A new standard-layout tensor from the pool.
pub fn permute<T, D, Sh>(
    function: &str,
    x: ArrayView<'_, T, D>,
    axes: &[usize],
    shape: Sh,
) -> Result<Array<T, D>, Error>
where
    T: Copy + Send + Sync + 'static,
    D: Dimension,
    Sh: IntoDimension<Dim = D>,
{
    let dim = shape.into_dimension();
    check_size::<T, D>(function, &dim)?;
    let mut out = crate::pool::try_uninit::<T, D>(function, "", dim)?;
    let shape = out.shape().to_vec();
    let elems = out.as_slice_mut().ok_or_else(|| internal(function, "a new tensor is not contiguous"))?;
    permute_to(function, x, axes, &shape, elems)?;
    // SAFETY: `permute_to` returned `Ok`: it wrote every element.
    Ok(unsafe { out.assume_init() })
}

/// [`permute`] into `out`, the elements of a standard-layout tensor of
/// shape `shape` in memory order, possibly uninitialized; every element is
/// written when it returns `Ok`.
pub(crate) fn permute_to<T, D>(
    function: &str,
    x: ArrayView<'_, T, D>,
    axes: &[usize],
    shape: &[usize],
    out: &mut [MaybeUninit<T>],
) -> Result<(), Error>
where
    T: Copy + Send + Sync + 'static,
    D: Dimension,
{
    permute_dyn(function, x.into_dyn(), axes, shape, out)
}

fn internal(function: &str, what: &str) -> Error {
    Error::Extent { function: function.to_string(), message: format!("internal error in einlang: {what}") }
}

/// A pointer that crosses threads: each task writes its own elements.
#[derive(Clone, Copy)]
struct Dst<T>(*mut MaybeUninit<T>);
// SAFETY: tasks write disjoint elements of one buffer that outlives them.
unsafe impl<T: Send> Send for Dst<T> {}
unsafe impl<T: Send> Sync for Dst<T> {}

/// The source's pointer, read by every task.
#[derive(Clone, Copy)]
struct Src<T>(*const T);
// SAFETY: the source is only read, and outlives the tasks.
unsafe impl<T: Sync> Send for Src<T> {}
unsafe impl<T: Sync> Sync for Src<T> {}

impl<T: Copy> Src<T> {
    /// The element `offset` elements from the source's first.
    ///
    /// # Safety
    ///
    /// `offset` addresses an element of the source view.
    unsafe fn at(self, offset: isize) -> T {
        unsafe { *self.0.offset(offset) }
    }
}

impl<T> Dst<T> {
    /// Writes `value` `offset` elements from the output's first.
    ///
    /// # Safety
    ///
    /// `offset` addresses an element of the output that no other task
    /// writes.
    unsafe fn put(self, offset: isize, value: T) {
        unsafe { (*self.0.offset(offset)).write(value) };
    }
}

fn permute_dyn<T>(
    function: &str,
    x: ArrayView<'_, T, IxDyn>,
    axes: &[usize],
    shape: &[usize],
    out: &mut [MaybeUninit<T>],
) -> Result<(), Error>
where
    T: Copy + Send + Sync + 'static,
{
    let rank = x.ndim();
    let mut seen = vec![false; rank];
    if axes.len() != rank || !axes.iter().all(|&a| a < rank && !std::mem::replace(&mut seen[a], true)) {
        return Err(internal(function, &format!("{axes:?} is not a permutation of {rank} axes")));
    }
    let v = x.permuted_axes(IxDyn(axes));
    // The output is the leading block of the permuted source.
    let total: usize = out.len();
    let inside = shape.len() == rank && shape.iter().zip(v.shape()).all(|(o, s)| o <= s);
    if !inside || shape.iter().product::<usize>() != total {
        return Err(internal(function, &format!("a permuted copy of shape {shape:?} from {:?}", v.shape())));
    }
    let v = v.slice_each_axis(|ax| Slice::from(0..shape[ax.axis.index()]));
    if total == 0 {
        return Ok(());
    }
    // Axes of extent 1 dropped, runs of axes merged: the same copy over
    // fewer, longer axes (a head split `[b, s, h, d] -> [b, h, s, d]` is a
    // copy of rows of `d`; `[a, b, c, d] -> [c, d, a, b]` a transpose).
    let (shape, src_strides) = merged(shape, v.strides());
    let rank = shape.len();
    let last = rank - 1;
    let mut out_strides = vec![1isize; rank];
    for k in (0..last).rev() {
        out_strides[k] = out_strides[k + 1] * shape[k + 1] as isize;
    }
    let src = Src(v.as_ptr());
    let dst = Dst(out.as_mut_ptr());
    // The output axis along which the source is contiguous, other than the
    // last (a transpose); the last itself when it is contiguous in both.
    let inner = (0..rank).rev().find(|&k| src_strides[k] == 1 && shape[k] > 1).unwrap_or(last);
    let parallel = total >= parallel_work();
    if inner == last || rank < 2 {
        // Rows of the output, each a strided (or contiguous) run of the source.
        let row = shape[last];
        let rows = total / row;
        let step = src_strides[last];
        if step == 1 && rank >= 3 && row * std::mem::size_of::<T>() <= 4096 {
            // Short contiguous rows whose source neighbour is another
            // output axis than the one before the last (a head split reads
            // `x[b, s, h, :]` into `y[b, h, s, :]`): rows in square tiles
            // of those two axes, so both sides move in runs of a tile's
            // rows instead of a page per row on one side.
            let near = (0..last).filter(|&k| shape[k] > 1).min_by_key(|&k| src_strides[k].unsigned_abs());
            if let Some(near) = near.filter(|&k| k != last - 1) {
                rows_in_tiles(src, dst, &shape, &src_strides, &out_strides, near, parallel);
                return Ok(());
            }
        }
        // Long rows in pieces, so that a copy of few rows still runs on
        // every thread.
        let pieces = row.div_ceil(PIECE);
        let copy_piece = |task: usize| {
            let (r, piece) = (task / pieces, task % pieces);
            let (j0, j1) = (piece * PIECE, ((piece + 1) * PIECE).min(row));
            let (mut s, mut rem) = (0isize, r);
            for k in (0..last).rev() {
                s += (rem % shape[k]) as isize * src_strides[k];
                rem /= shape[k];
            }
            let d = dst;
            if step == 1 {
                // SAFETY: the source's elements `j0..j1` of this row are
                // one run of the view (unit stride, every index inside its
                // shape); the output's are inside `out` and this task's
                // alone, and the two buffers do not overlap.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        src.0.offset(s + j0 as isize),
                        d.0.add(r * row + j0).cast::<T>(),
                        j1 - j0,
                    )
                };
                return;
            }
            for j in j0..j1 {
                // SAFETY: `s + j * stride` is an element of the source view
                // (every index is inside its shape); `r * row + j` is inside
                // `out`, and it is this task's alone.
                unsafe { d.put((r * row + j) as isize, src.at(s + j as isize * step)) };
            }
        };
        let tasks = rows * pieces;
        if parallel {
            // Tasks of at least a few thousand elements: short rows (a
            // head's features) would otherwise cost a task each.
            (0..tasks).into_par_iter().with_min_len((ROW_TASK / row.min(PIECE)).max(1)).for_each(copy_piece);
        } else {
            (0..tasks).for_each(copy_piece);
        }
        return Ok(());
    }
    // Tiles of (inner, last): for every position of the other axes, the
    // `inner` axis in blocks of BLOCK (one task each), within which the last
    // axis runs in blocks of BLOCK, each in tiles of TILE.
    let others: Vec<usize> = (0..last).filter(|&k| k != inner).collect();
    let outer: usize = others.iter().map(|&k| shape[k]).product();
    let (n_in, n_last) = (shape[inner], shape[last]);
    let blocks = n_in.div_ceil(BLOCK);
    let side = if out_strides[last] == 1 { square_side::<T>(src_strides[last], out_strides[inner]) } else { 0 };
    let tile = |task: usize| {
        let (pos, block) = (task / blocks, task % blocks);
        let (s, o) = offsets(pos, &others, &shape, &src_strides, &out_strides);
        let d = dst;
        let (a0, a1) = (block * BLOCK, ((block + 1) * BLOCK).min(n_in));
        // Blocks of BLOCK x BLOCK (the pages they touch stay in the TLB),
        // in tiles of TILE x TILE (the lines they touch stay in L1).
        for bb in (0..n_last).step_by(BLOCK) {
            let bb1 = (bb + BLOCK).min(n_last);
            for ta in (a0..a1).step_by(TILE) {
                let ta1 = (ta + TILE).min(a1);
                for tb in (bb..bb1).step_by(TILE) {
                    let tb1 = (tb + TILE).min(bb1);
                    // Whole squares of 4-byte elements in registers
                    // (`square_side`), the rest of the tile element by
                    // element.
                    let (sq_a, sq_b) = match side {
                        0 => (ta, tb),
                        n => (ta + (ta1 - ta) / n * n, tb + (tb1 - tb) / n * n),
                    };
                    for a in (ta..sq_a).step_by(side.max(1)) {
                        let (sa, oa) = (s + a as isize, o + a as isize * out_strides[inner]);
                        for b in (tb..sq_b).step_by(side) {
                            // SAFETY: `square_side` is not 0 only where the
                            // processor has the square's instructions and
                            // `T` is 4 bytes; the square's rows `a..a +
                            // side` and columns `b..b + side` lie inside the
                            // tile (so inside the view and the output, and
                            // in this task's part of it), the source's
                            // `inner` axis has unit stride and the output's
                            // last axis too.
                            unsafe {
                                square(
                                    side,
                                    src.0.offset(sa + b as isize * src_strides[last]).cast(),
                                    src_strides[last],
                                    d.0.offset(oa + b as isize).cast(),
                                    out_strides[inner],
                                )
                            };
                        }
                    }
                    for a in ta..ta1 {
                        let from = if a < sq_a { sq_b } else { tb };
                        let (sa, oa) = (s + a as isize, o + a as isize * out_strides[inner]);
                        for b in from..tb1 {
                            // SAFETY: (a, b) and the other indices are inside
                            // the view's shape and the output's; the output
                            // elements of this block of `inner` are this
                            // task's alone.
                            unsafe { d.put(oa + b as isize, src.at(sa + b as isize * src_strides[last])) };
                        }
                    }
                }
            }
        }
    };
    if parallel {
        (0..outer * blocks).into_par_iter().for_each(tile);
    } else {
        (0..outer * blocks).for_each(tile);
    }
    Ok(())
}

/// The source's and the output's offsets of position `pos` of the axes
/// `others` (the last of them varying fastest).
fn offsets(
    pos: usize,
    others: &[usize],
    shape: &[usize],
    src_strides: &[isize],
    out_strides: &[isize],
) -> (isize, isize) {
    let (mut s, mut o, mut rem) = (0isize, 0isize, pos);
    for &k in others.iter().rev() {
        let i = (rem % shape[k]) as isize;
        rem /= shape[k];
        s += i * src_strides[k];
        o += i * out_strides[k];
    }
    (s, o)
}

/// The side of a tile of rows, in rows (`rows_in_tiles`).
const ROW_TILE: usize = 16;

/// The row copy of `permute_dyn` (the last axis contiguous in both) in
/// tiles of `ROW_TILE` x `ROW_TILE` rows over the output axes `near` (the
/// source's next contiguous axis) and `last - 1` (the output's): within a
/// tile the source is read in runs of the rows of `near` and the output
/// written in runs of the rows of `last - 1`. One task per tile.
fn rows_in_tiles<T: Copy + Send + Sync>(
    src: Src<T>,
    dst: Dst<T>,
    shape: &[usize],
    src_strides: &[isize],
    out_strides: &[isize],
    near: usize,
    parallel: bool,
) {
    let last = shape.len() - 1;
    let (pa, pb) = (near, last - 1);
    let row = shape[last];
    let others: Vec<usize> = (0..last).filter(|&k| k != pa && k != pb).collect();
    let outer: usize = others.iter().map(|&k| shape[k]).product();
    let (ta, tb) = (shape[pa].div_ceil(ROW_TILE), shape[pb].div_ceil(ROW_TILE));
    let tile = |task: usize| {
        let (pos, t) = (task / (ta * tb), task % (ta * tb));
        let (a0, b0) = ((t / tb) * ROW_TILE, (t % tb) * ROW_TILE);
        let (s, o) = offsets(pos, &others, shape, src_strides, out_strides);
        let (sp, d) = (src, dst);
        for b in b0..(b0 + ROW_TILE).min(shape[pb]) {
            for a in a0..(a0 + ROW_TILE).min(shape[pa]) {
                let from = s + a as isize * src_strides[pa] + b as isize * src_strides[pb];
                let to = o + a as isize * out_strides[pa] + b as isize * out_strides[pb];
                // SAFETY: the source's `row` elements from `from` are one
                // run of the view (unit stride along the last axis, every
                // index inside its shape); the output's row at `to` is
                // inside `out`, written by this tile's task alone (tiles
                // and positions of the other axes are disjoint), and the
                // buffers do not overlap.
                unsafe { std::ptr::copy_nonoverlapping(sp.0.offset(from), d.0.offset(to).cast::<T>(), row) };
            }
        }
    };
    let tasks = outer * ta * tb;
    if parallel {
        (0..tasks).into_par_iter().for_each(tile);
    } else {
        (0..tasks).for_each(tile);
    }
}

/// `shape` (the output's, standard layout) and the source's `strides` per
/// output axis, with the axes of extent 1 dropped and each pair of
/// neighbouring axes that is one run in the source too (the outer axis's
/// stride is the inner's times the inner's extent) merged into one: the
/// same elements in the same order on both sides, over fewer axes. At
/// least one axis is left.
fn merged(shape: &[usize], strides: &[isize]) -> (Vec<usize>, Vec<isize>) {
    let (mut axes, mut steps): (Vec<usize>, Vec<isize>) = (Vec::new(), Vec::new());
    for (&n, &stride) in shape.iter().zip(strides) {
        if n == 1 {
            continue;
        }
        if let (Some(outer), Some(outer_stride)) = (axes.last_mut(), steps.last_mut()) {
            if *outer_stride == stride * n as isize {
                *outer *= n;
                *outer_stride = stride;
                continue;
            }
        }
        axes.push(n);
        steps.push(stride);
    }
    if axes.is_empty() {
        axes.push(1);
        steps.push(1);
    }
    (axes, steps)
}

/// The side of the squares in which tiles of `T` move through registers:
/// 16 (`square16`, AVX-512) or 8 (`square8`, AVX2) for 4-byte elements,
/// at most `SQUARE_AT_MOST`; 0 for element by element. `src_step` and
/// `dst_step` are the distances (in elements) between the rows a square
/// reads and between those it writes: where either is a multiple of
/// `SAME_SET` bytes, all sixteen rows fall in one set of the caches, which
/// hold eight lines a set, and squares of 8 are taken (a 64 x 512 x 512
/// reversal of axes took 1.1 times as long in squares of 16; shapes off
/// powers of two, the same).
fn square_side<T>(src_step: isize, dst_step: isize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let most = SQUARE_AT_MOST.load(std::sync::atomic::Ordering::Relaxed);
        let bytes = |step: isize| step.unsigned_abs() * std::mem::size_of::<T>();
        let one_set = |step: isize| bytes(step) % SAME_SET == 0;
        if std::mem::size_of::<T>() != 4 || most < 8 || !crate::cpu::wide() {
            0
        } else if most >= 16 && crate::cpu::wide512() && !one_set(src_step) && !one_set(dst_step) {
            16
        } else {
            8
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (src_step, dst_step);
        0
    }
}

/// A distance in bytes at which addresses fall in the same set of the L1
/// and L2 caches of the processors this runs on (the L2's way is 64 KiB
/// or 128 KiB).
const SAME_SET: usize = 64 << 10;

/// The largest square side `square_side` may choose (the tests lower it
/// to compare every path on the same inputs).
static SQUARE_AT_MOST: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(16);

/// One square of `side` (16 or 8) of `square_side`.
///
/// # Safety
///
/// As `square16` for 16, `square8` for 8.
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn square(side: usize, src: *const f32, src_stride: isize, dst: *mut MaybeUninit<f32>, dst_stride: isize) {
    // SAFETY: as the caller vouches for this side.
    unsafe {
        if side == 16 {
            square16(src, src_stride, dst, dst_stride)
        } else {
            square8(src, src_stride, dst, dst_stride)
        }
    }
}

/// The same square element by element (`square_side` keeps other
/// processors off this path; it is here so that the tile loop reads the
/// same everywhere).
///
/// # Safety
///
/// The `side` x `side` elements read and written exist, and no other
/// thread writes the ones written.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn square(side: usize, src: *const f32, src_stride: isize, dst: *mut MaybeUninit<f32>, dst_stride: isize) {
    for k in 0..side as isize {
        for j in 0..side as isize {
            // SAFETY: as the caller vouches.
            unsafe { (*dst.offset(k * dst_stride + j)).write(*src.offset(j * src_stride + k)) };
        }
    }
}

/// Transposes a 16 x 16 square of 4-byte elements as `square8` does an
/// 8 x 8 one, with 512-bit registers: sixteen loads of a whole cache line
/// each (when the rows are aligned to one) and sixteen stores, 64 shuffles
/// for 256 elements where `square8` takes 24 for 64, and no line is taken
/// in two halves at two times. A 256 x 4096 transpose (in cache) took 0.21
/// ms against 0.31 in squares of 8; from memory the two are within this
/// machine's noise (4096 x 4096: 8.0-9.4 ms against 9.1-9.8, about twice
/// the time of a copy of the same tensor).
///
/// # Safety
///
/// The processor has AVX-512F; the 16 x 16 elements read and written
/// exist, are 4 bytes each, and no other thread writes the ones written.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn square16(src: *const f32, src_stride: isize, dst: *mut MaybeUninit<f32>, dst_stride: isize) {
    use std::arch::x86_64::*;
    let dst = dst.cast::<f32>();
    // SAFETY: the rows read and written are the square's, as the caller
    // vouches; AVX-512F too.
    unsafe {
        let rows: [__m512; 16] = std::array::from_fn(|k| _mm512_loadu_ps(src.offset(k as isize * src_stride)));
        for (c, v) in transpose16(rows).into_iter().enumerate() {
            _mm512_storeu_ps(dst.offset(c as isize * dst_stride), v);
        }
    }
}

/// The transpose of a 16 x 16 block held as sixteen rows: element `c` of
/// row `i` becomes element `i` of row `c` (`square16`, and the packing of
/// the AVX-512 products' panels, `gemm_packed::gather_panel`). Pairs of
/// rows interleaved by elements, then by pairs (each 128-bit lane then
/// holds four rows' values of one column), then the lanes of four such
/// vectors brought together.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) fn transpose16(r: [std::arch::x86_64::__m512; 16]) -> [std::arch::x86_64::__m512; 16] {
    use std::arch::x86_64::*;
    // t[2i] lane L: r[2i][4L], r[2i+1][4L], r[2i][4L+1], r[2i+1][4L+1];
    // t[2i+1] the same for 4L+2 and 4L+3.
    let t: [__m512; 16] = std::array::from_fn(|x| {
        let (a, b) = (r[x & !1], r[x | 1]);
        if x % 2 == 0 {
            _mm512_unpacklo_ps(a, b)
        } else {
            _mm512_unpackhi_ps(a, b)
        }
    });
    // u[4g + c] lane L: column 4L + c of rows 4g..4g + 4.
    let u: [__m512; 16] = std::array::from_fn(|x| {
        let (g, c) = (x / 4, x % 4);
        let (a, b) = (_mm512_castps_pd(t[4 * g + c / 2]), _mm512_castps_pd(t[4 * g + 2 + c / 2]));
        _mm512_castpd_ps(if c % 2 == 0 { _mm512_unpacklo_pd(a, b) } else { _mm512_unpackhi_pd(a, b) })
    });
    let mut out = [_mm512_setzero_ps(); 16];
    for c in 0..4 {
        let (a, b, cc, d) = (u[c], u[4 + c], u[8 + c], u[12 + c]);
        // Lanes 0, 1 of each group and lanes 2, 3, in group order.
        let x0 = _mm512_shuffle_f32x4::<0b0100_0100>(a, b);
        let x1 = _mm512_shuffle_f32x4::<0b1110_1110>(a, b);
        let y0 = _mm512_shuffle_f32x4::<0b0100_0100>(cc, d);
        let y1 = _mm512_shuffle_f32x4::<0b1110_1110>(cc, d);
        out[c] = _mm512_shuffle_f32x4::<0b1000_1000>(x0, y0);
        out[4 + c] = _mm512_shuffle_f32x4::<0b1101_1101>(x0, y0);
        out[8 + c] = _mm512_shuffle_f32x4::<0b1000_1000>(x1, y1);
        out[12 + c] = _mm512_shuffle_f32x4::<0b1101_1101>(x1, y1);
    }
    out
}

/// Transposes an 8 x 8 square of 4-byte elements: source row `r` (8
/// contiguous elements at `src + r * src_stride`) becomes output column
/// `r` (`dst + c * dst_stride + r`), in eight loads, 24 shuffles and eight
/// stores where the element-by-element copy does 64 loads and stores.
/// The elements move as raw bits (shuffles never change a lane).
///
/// # Safety
///
/// The processor has AVX2; the 8 x 8 elements read and written exist,
/// are 4 bytes each, and no other thread writes the ones written.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn square8(src: *const f32, src_stride: isize, dst: *mut MaybeUninit<f32>, dst_stride: isize) {
    use std::arch::x86_64::*;
    let dst = dst.cast::<f32>();
    unsafe {
        let r: [__m256; 8] = std::array::from_fn(|k| _mm256_loadu_ps(src.offset(k as isize * src_stride)));
        // Pairs of rows interleaved, then pairs of pairs, then halves.
        let t0 = _mm256_unpacklo_ps(r[0], r[1]);
        let t1 = _mm256_unpackhi_ps(r[0], r[1]);
        let t2 = _mm256_unpacklo_ps(r[2], r[3]);
        let t3 = _mm256_unpackhi_ps(r[2], r[3]);
        let t4 = _mm256_unpacklo_ps(r[4], r[5]);
        let t5 = _mm256_unpackhi_ps(r[4], r[5]);
        let t6 = _mm256_unpacklo_ps(r[6], r[7]);
        let t7 = _mm256_unpackhi_ps(r[6], r[7]);
        let u0 = _mm256_shuffle_ps::<0b01_00_01_00>(t0, t2);
        let u1 = _mm256_shuffle_ps::<0b11_10_11_10>(t0, t2);
        let u2 = _mm256_shuffle_ps::<0b01_00_01_00>(t1, t3);
        let u3 = _mm256_shuffle_ps::<0b11_10_11_10>(t1, t3);
        let u4 = _mm256_shuffle_ps::<0b01_00_01_00>(t4, t6);
        let u5 = _mm256_shuffle_ps::<0b11_10_11_10>(t4, t6);
        let u6 = _mm256_shuffle_ps::<0b01_00_01_00>(t5, t7);
        let u7 = _mm256_shuffle_ps::<0b11_10_11_10>(t5, t7);
        let c = [
            _mm256_permute2f128_ps::<0x20>(u0, u4),
            _mm256_permute2f128_ps::<0x20>(u1, u5),
            _mm256_permute2f128_ps::<0x20>(u2, u6),
            _mm256_permute2f128_ps::<0x20>(u3, u7),
            _mm256_permute2f128_ps::<0x31>(u0, u4),
            _mm256_permute2f128_ps::<0x31>(u1, u5),
            _mm256_permute2f128_ps::<0x31>(u2, u6),
            _mm256_permute2f128_ps::<0x31>(u3, u7),
        ];
        for (k, v) in c.into_iter().enumerate() {
            _mm256_storeu_ps(dst.offset(k as isize * dst_stride), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array2, ArrayD, ShapeBuilder};

    /// The naive permuted copy: `out[o] = x[o permuted]`.
    fn naive(x: &ArrayD<i64>, axes: &[usize], shape: &[usize]) -> ArrayD<i64> {
        ArrayD::from_shape_fn(IxDyn(shape), |o| {
            let mut src = vec![0; axes.len()];
            for (k, &a) in axes.iter().enumerate() {
                src[a] = o[k];
            }
            x[IxDyn(&src)]
        })
    }

    fn all_permutations(n: usize) -> Vec<Vec<usize>> {
        if n == 0 {
            return vec![vec![]];
        }
        let mut out = Vec::new();
        for p in all_permutations(n - 1) {
            for at in 0..=p.len() {
                let mut q = p.clone();
                q.insert(at, n - 1);
                out.push(q);
            }
        }
        out
    }

    #[test]
    fn every_permutation_of_odd_shapes_matches_the_naive_copy() {
        for shape in [vec![1usize], vec![7, 1], vec![37, 41], vec![3, 5, 7], vec![2, 33, 1, 65], vec![0, 4, 3]] {
            let x = ArrayD::from_shape_fn(IxDyn(&shape), |i| i.slice().iter().fold(0i64, |a, &v| a * 101 + v as i64));
            for axes in all_permutations(shape.len()) {
                let out_shape: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
                let y = permute("f", x.view(), &axes, IxDyn(&out_shape)).unwrap();
                assert_eq!(y, naive(&x, &axes, &out_shape), "shape {shape:?}, axes {axes:?}");
                // A leading block of the permuted source.
                let block: Vec<usize> = out_shape.iter().map(|&n| n - n / 3).collect();
                let y = permute("f", x.view(), &axes, IxDyn(&block)).unwrap();
                assert_eq!(y, naive(&x, &axes, &block), "block {block:?} of {shape:?}, axes {axes:?}");
            }
        }
    }

    #[test]
    fn large_transposes_of_strided_sources_run_in_parallel_tiles() {
        let (n, m) = (300, 517);
        let x = Array2::from_shape_fn((n, m), |(i, j)| (i * m + j) as f32);
        let y = permute("f", x.view(), &[1, 0], (m, n)).unwrap();
        assert_eq!(y, x.t());
        // A column-major source: its transpose is a row copy.
        let f = Array2::from_shape_fn((n, m).f(), |(i, j)| (i * m + j) as f32);
        let y = permute("f", f.view(), &[1, 0], (m, n)).unwrap();
        assert_eq!(y, f.t());
    }

    /// 4-byte elements go through the AVX2 squares where the processor has
    /// them: every permutation of odd shapes (tiles with and without whole
    /// squares, remainders on both sides), raw bits kept (NaN patterns
    /// included), and the same as the element-by-element path.
    #[test]
    fn squares_of_four_byte_elements_match_the_naive_copy_bit_for_bit() {
        for shape in [
            vec![37usize, 41],
            vec![8, 8],
            vec![9, 300],
            vec![300, 517],
            vec![3, 17, 19],
            vec![2, 13, 1, 40],
            vec![0, 9],
        ] {
            let x = ArrayD::from_shape_fn(IxDyn(&shape), |i| {
                let v = i.slice().iter().fold(0u32, |a, &v| a.wrapping_mul(131).wrapping_add(v as u32));
                // Some quiet and signalling NaN patterns among plain values.
                v.wrapping_mul(0x9e37_79b9) | if v % 5 == 0 { 0x7f80_0001 } else { 0 }
            });
            let x64 = x.mapv(i64::from);
            for axes in all_permutations(shape.len()) {
                let out_shape: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
                let want = naive(&x64, &axes, &out_shape).mapv(|v| v as u32);
                let y = permute("f", x.view(), &axes, IxDyn(&out_shape)).unwrap();
                assert_eq!(y, want, "shape {shape:?}, axes {axes:?}");
                let f = x.mapv(f32::from_bits);
                let yf = permute("f", f.view(), &axes, IxDyn(&out_shape)).unwrap();
                assert_eq!(yf.mapv(f32::to_bits), want, "f32 shape {shape:?}, axes {axes:?}");
            }
        }
        // Squares of 16 and of 8 and the element-by-element path give the
        // same on large transposes, whole and of a block whose rows start
        // off a cache line.
        let (n, m) = (300, 517);
        let x = Array2::from_shape_fn((n, m), |(i, j)| (i * m + j) as u32);
        let block = x.slice(ndarray::s![3.., 5..]);
        for most in [16, 8, 0] {
            SQUARE_AT_MOST.store(most, std::sync::atomic::Ordering::Relaxed);
            let y = permute("f", x.view(), &[1, 0], (m, n));
            let b = permute("f", block, &[1, 0], (m - 5, n - 3));
            SQUARE_AT_MOST.store(16, std::sync::atomic::Ordering::Relaxed);
            assert_eq!(y.unwrap(), x.t(), "squares of at most {most}");
            assert_eq!(b.unwrap(), block.t(), "squares of at most {most}, a block");
        }
    }

    /// Permutations that keep runs of the source together (a head split,
    /// a block transpose, extents of 1 anywhere), large enough to run in
    /// parallel, from standard, sliced and reversed sources; and one long
    /// row copied in pieces.
    #[test]
    fn merged_axes_and_row_copies_match_the_naive_copy() {
        use ndarray::s;
        let cases: [(Vec<usize>, Vec<usize>); 6] = [
            (vec![3, 67, 5, 64], vec![0, 2, 1, 3]),
            (vec![2, 97, 7, 5], vec![0, 2, 1, 3]),
            (vec![5, 7, 31, 33], vec![2, 3, 0, 1]),
            (vec![1, 300, 1, 229], vec![2, 0, 3, 1]),
            (vec![1, 150_001], vec![1, 0]),
            (vec![9, 1, 11, 1, 400], vec![3, 1, 0, 2, 4]),
        ];
        for (shape, axes) in cases {
            let x = ArrayD::from_shape_fn(IxDyn(&shape), |i| i.slice().iter().fold(0i64, |a, &v| a * 1009 + v as i64));
            let out_shape: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
            let y = permute("f", x.view(), &axes, IxDyn(&out_shape)).unwrap();
            assert_eq!(y, naive(&x, &axes, &out_shape), "shape {shape:?}, axes {axes:?}");
            let block: Vec<usize> = out_shape.iter().map(|&n| n - n / 4).collect();
            let y = permute("f", x.view(), &axes, IxDyn(&block)).unwrap();
            assert_eq!(y, naive(&x, &axes, &block), "block {block:?} of {shape:?}, axes {axes:?}");
        }
        // A source read backwards along its last axis (negative stride).
        let x =
            ArrayD::from_shape_fn(IxDyn(&[4, 50, 3, 70]), |i| i.slice().iter().fold(0i64, |a, &v| a * 1009 + v as i64));
        let backwards = x.slice(s![.., .., .., ..;-1]).into_dyn();
        let r = backwards.to_owned();
        let y = permute("f", backwards, &[0, 2, 1, 3], IxDyn(&[4, 3, 50, 70])).unwrap();
        assert_eq!(y, naive(&r, &[0, 2, 1, 3], &[4, 3, 50, 70]));
    }

    #[test]
    fn a_shape_outside_the_source_is_an_error_not_a_read() {
        let x = Array2::<f32>::zeros((3, 4));
        assert!(permute("f", x.view(), &[1, 0], (5, 3)).is_err());
        assert!(permute("f", x.view(), &[0, 0], (3, 3)).is_err());
    }
}
