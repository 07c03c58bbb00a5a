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

use crate::par::{check_size, PAR_THRESHOLD};
use crate::Error;

/// The side of a tile, in elements: 32 x 32 `f32` is 4 KiB of each side.
const TILE: usize = 32;

/// The side of a block of tiles: its source and output lines lie on at
/// most 2 x 256 pages, which the TLB holds.
const BLOCK: usize = 256;

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
    let last = rank - 1;
    let src_strides: Vec<isize> = v.strides().to_vec();
    let mut out_strides = vec![1isize; rank];
    for k in (0..last).rev() {
        out_strides[k] = out_strides[k + 1] * shape[k + 1] as isize;
    }
    let src = Src(v.as_ptr());
    let dst = Dst(out.as_mut_ptr());
    // The output axis along which the source is contiguous, other than the
    // last (a transpose); the last itself when it is contiguous in both.
    let inner = (0..rank).rev().find(|&k| src_strides[k] == 1 && shape[k] > 1).unwrap_or(last);
    let parallel = total >= PAR_THRESHOLD;
    if inner == last || rank < 2 {
        // Rows of the output, each a strided (or contiguous) run of the source.
        let row = shape[last];
        let rows = total / row;
        let copy_row = |r: usize| {
            let (mut s, mut rem) = (0isize, r);
            for k in (0..last).rev() {
                s += (rem % shape[k]) as isize * src_strides[k];
                rem /= shape[k];
            }
            let d = dst;
            for j in 0..row {
                // SAFETY: `s + j * stride` is an element of the source view
                // (every index is inside its shape); `r * row + j` is inside
                // `out`, and row `r` is this task's alone.
                unsafe { d.put((r * row + j) as isize, src.at(s + j as isize * src_strides[last])) };
            }
        };
        if parallel {
            (0..rows).into_par_iter().for_each(copy_row);
        } else {
            (0..rows).for_each(copy_row);
        }
        return Ok(());
    }
    // Tiles of (inner, last): for every position of the other axes, the
    // `inner` axis in blocks of TILE (one task each), within which the last
    // axis runs in blocks of TILE.
    let others: Vec<usize> = (0..last).filter(|&k| k != inner).collect();
    let outer: usize = others.iter().map(|&k| shape[k]).product();
    let (n_in, n_last) = (shape[inner], shape[last]);
    let blocks = n_in.div_ceil(BLOCK);
    let tile = |task: usize| {
        let (pos, block) = (task / blocks, task % blocks);
        let (mut s, mut o, mut rem) = (0isize, 0isize, pos);
        for &k in others.iter().rev() {
            let i = (rem % shape[k]) as isize;
            rem /= shape[k];
            s += i * src_strides[k];
            o += i * out_strides[k];
        }
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
                    for a in ta..ta1 {
                        let (sa, oa) = (s + a as isize, o + a as isize * out_strides[inner]);
                        for b in tb..tb1 {
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

    #[test]
    fn a_shape_outside_the_source_is_an_error_not_a_read() {
        let x = Array2::<f32>::zeros((3, 4));
        assert!(permute("f", x.view(), &[1, 0], (5, 3)).is_err());
        assert!(permute("f", x.view(), &[0, 0], (3, 3)).is_err());
    }
}
