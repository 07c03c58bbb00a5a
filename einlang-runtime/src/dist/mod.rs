//! Processes working together on one `#[shard(B)]` function: the [`World`]
//! of ranks, [`block`] (which part of a sharded axis a rank holds), and the
//! communication generated code calls.
//!
//! With the cargo feature `mpi`, and when the process was started by an MPI
//! launcher (`mpirun`, `mpiexec`, `srun`), a [`World`] is MPI's
//! `MPI_COMM_WORLD` (through the `mpi` crate). Otherwise it is a world of
//! one, and nothing is ever sent: the generated code then computes what the
//! unsharded function computes.
//!
//! Every collective here is called by every rank in the same order (the
//! generated code makes the same calls on every rank, whatever its data),
//! and every one that could meet a rank that has stopped with an error is
//! preceded by [`World::agree`]: each rank says whether it is still well,
//! and all return the first rank's error together instead of some of them
//! waiting for ever. Reductions combine the ranks' parts in rank order on
//! every rank, so every rank gets the same bits whatever algorithm the MPI
//! library would have chosen.

use crate::pool::alloc_error;
use crate::Error;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// The contiguous, balanced block of `0..n` that rank `rank` of `size`
/// holds: the first `n % size` blocks have one element more than the
/// others. The blocks of ranks `0..size`, in order, are `0..n`. Empty when
/// `rank >= size` or `size == 0`.
pub fn block(n: usize, rank: usize, size: usize) -> Range<usize> {
    if size == 0 || rank >= size {
        return n..n;
    }
    let (q, r) = (n / size, n % size);
    let start = rank * q + rank.min(r);
    let len = q + usize::from(rank < r);
    start..start + len
}

/// The ranks working together on sharded functions: this process's rank,
/// how many there are, and what this rank has sent.
///
/// Generated `#[shard(B)]` functions take `&World` first. All ranks must
/// call the same sharded functions in the same order.
///
/// Dropping a `World` does not finalize MPI: the process's one MPI session
/// (shared by every `World` of the process) is finalized when the process
/// exits, because MPI cannot be initialized again after `MPI_Finalize`
/// ([`World::init`]).
pub struct World {
    rank: usize,
    size: usize,
    sent: AtomicU64,
    /// Set when [`World::agree`] returned an error (every rank knows it).
    agreed_error: AtomicBool,
    /// The most bytes one communication buffer may take
    /// ([`World::set_buffer_limit`]; `usize::MAX`: no limit).
    limit: AtomicUsize,
    /// The extended copies of sharded definitions kept between calls
    /// ([`extend_start`]), by function and tensor: a call takes its copy
    /// out and puts it back when done.
    kept: std::sync::Mutex<Vec<halo::Kept>>,
    #[cfg(feature = "mpi")]
    mpi: Option<mpi_world::Handle>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World").field("rank", &self.rank).field("size", &self.size).finish()
    }
}

impl World {
    /// The world this process belongs to. Under an MPI launcher (and with
    /// the feature `mpi`) this initializes MPI on the first call; MPI is
    /// finalized when the process exits (after `main` returns, so after
    /// its `World`s are dropped), not at the drop of a `World`: MPI cannot
    /// be initialized again after `MPI_Finalize`, and `init` may be called
    /// again (by each test of a test binary): every call shares the one
    /// MPI session.
    /// Without a launcher, or without the feature, a world of one.
    ///
    /// `EINLANG_MPI=0` in the environment keeps a process launched by MPI
    /// a world of one; `EINLANG_MPI=1` initializes MPI even without a
    /// launcher (MPI's singleton start).
    pub fn init() -> Result<World, Error> {
        #[cfg(feature = "mpi")]
        {
            if mpi_world::wanted() {
                let handle = mpi_world::Handle::get()?;
                let (rank, size) = handle.rank_size();
                return Ok(World {
                    rank,
                    size,
                    sent: AtomicU64::new(0),
                    agreed_error: AtomicBool::new(false),
                    limit: AtomicUsize::new(usize::MAX),
                    kept: std::sync::Mutex::new(Vec::new()),
                    mpi: Some(handle),
                });
            }
        }
        Ok(World::alone())
    }

    /// A world of one: this process alone, whatever launched it.
    pub fn alone() -> World {
        World {
            rank: 0,
            size: 1,
            sent: AtomicU64::new(0),
            agreed_error: AtomicBool::new(false),
            limit: AtomicUsize::new(usize::MAX),
            kept: std::sync::Mutex::new(Vec::new()),
            #[cfg(feature = "mpi")]
            mpi: None,
        }
    }

    /// This process's rank, `0..size()`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// How many ranks there are.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The bytes this rank has handed to communication calls through this
    /// `World` so far (what it sent, counted once per call, not what it
    /// received). A world of one sends nothing.
    pub fn bytes_sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// This rank's block of `0..n` ([`block`]).
    pub fn block(&self, n: usize) -> Range<usize> {
        block(n, self.rank, self.size)
    }

    pub(crate) fn count(&self, bytes: usize) {
        self.sent.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Every rank's `mine` (the same length on every rank), concatenated
    /// in rank order: for messages whose length the program fixes (a word
    /// per rank: statuses, extents, scalars), allocated as usual.
    fn gather_fixed(&self, mine: &[u8]) -> Vec<u8> {
        let mut all = vec![0u8; mine.len() * self.size];
        self.gather_into(mine, &mut all);
        all
    }

    /// Every rank's `mine` (the same length on every rank), in rank order
    /// into `all` (`mine.len()` bytes per rank, allocated by the caller).
    fn gather_into(&self, mine: &[u8], all: &mut [u8]) {
        if self.size == 1 {
            all[..mine.len()].copy_from_slice(mine);
            return;
        }
        self.count(mine.len());
        if mine.is_empty() {
            return;
        }
        #[cfg(feature = "mpi")]
        if let Some(h) = &self.mpi {
            h.all_gather_into(mine, all);
            return;
        }
        unreachable_world()
    }

    /// The most bytes one communication buffer of this rank may take (the
    /// message of a collective, what it receives, a halo's rows): a larger
    /// one is `Err(Error::Alloc)` as when the allocator has no room for
    /// it, agreed by every rank before anything is sent. `None` (the
    /// default) leaves the allocator alone to say. It bounds what
    /// communication allocates on this rank, and lets a test make one
    /// rank's allocation fail.
    pub fn set_buffer_limit(&self, bytes: Option<usize>) {
        self.limit.store(bytes.unwrap_or(usize::MAX), Ordering::Relaxed);
    }

    /// `bytes` when the limit of [`World::set_buffer_limit`] allows it;
    /// otherwise (or when the count overflowed: `None`) `Error::Alloc`
    /// naming `function` and `tensor`.
    fn allowed(&self, function: &str, tensor: &str, bytes: Option<usize>) -> Result<usize, Error> {
        match bytes {
            Some(b) if b <= self.limit.load(Ordering::Relaxed) => Ok(b),
            b => Err(alloc_error(function, tensor, b.unwrap_or(usize::MAX))),
        }
    }

    /// An empty buffer with room for `bytes` bytes, or `Error::Alloc`
    /// naming `function` and `tensor` when the allocator (or the limit of
    /// [`World::set_buffer_limit`]) has no room for it.
    fn room(&self, function: &str, tensor: &str, bytes: Option<usize>) -> Result<Vec<u8>, Error> {
        let bytes = self.allowed(function, tensor, bytes)?;
        let mut v = Vec::new();
        v.try_reserve_exact(bytes).map_err(|_| alloc_error(function, tensor, bytes))?;
        Ok(v)
    }

    /// A buffer of `n` copies of `fill` (within the limit, as
    /// [`World::room`]).
    fn filled<T: Clone>(&self, function: &str, tensor: &str, n: usize, fill: T) -> Result<Vec<T>, Error> {
        self.allowed(function, tensor, n.checked_mul(std::mem::size_of::<T>()))?;
        try_filled(function, tensor, n, fill)
    }

    /// The buffers of one collective whose message comes from the data:
    /// room for this rank's `send` bytes and for every rank's (`send`
    /// bytes each, zeroed), allocated fallibly; then the ranks agree on
    /// their status (`prior`, the caller's, then these allocations), so
    /// that a rank that cannot take part makes every rank return its error
    /// before any data is sent.
    fn message(
        &self,
        function: &str,
        tensor: &str,
        prior: Result<(), Error>,
        send: usize,
    ) -> Result<(Vec<u8>, Vec<u8>), Error> {
        let buffers = prior.and_then(|()| {
            let mine = self.room(function, tensor, Some(send))?;
            let mut all = self.room(function, tensor, send.checked_mul(self.size))?;
            // Within the reserved room: no allocation.
            all.resize(send * self.size, 0);
            Ok((mine, all))
        });
        self.agreed(function, buffers)
    }

    /// `prepared` (what a collective allocated, or this rank's error) once
    /// every rank agreed that all of them are well; otherwise the first
    /// failing rank's error, on every rank.
    fn agreed<B>(&self, function: &str, prepared: Result<B, Error>) -> Result<B, Error> {
        match prepared {
            Ok(b) => self.agree(Ok(())).map(|()| b),
            Err(e) => Err(self.agree(Err(e)).err().unwrap_or_else(|| Error::Dist {
                message: format!("in `{function}`: an error was lost between ranks"),
            })),
        }
    }

    /// Every rank's `mine` (of any length), in rank order.
    fn gather_var(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        if self.size == 1 {
            return vec![mine.to_vec()];
        }
        let lens = self.gather_fixed(&(mine.len() as u64).to_le_bytes());
        let lens: Vec<usize> =
            lens.chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as usize).collect();
        if lens.iter().all(|&l| l == 0) {
            return vec![Vec::new(); self.size];
        }
        self.count(mine.len());
        #[cfg(feature = "mpi")]
        if let Some(h) = &self.mpi {
            return h.all_gather_var(mine, &lens);
        }
        unreachable_world()
    }

    /// Status agreement: every rank contributes its status, and every rank
    /// gets the same result: `Ok` when all were `Ok`, otherwise the error
    /// of the first rank that had one (the same error on every rank).
    /// Generated code calls it before a collective whose partners might
    /// have stopped, and at the end of every sharded function.
    pub fn agree(&self, status: Result<(), Error>) -> Result<(), Error> {
        if self.size == 1 {
            return status;
        }
        let mine = match &status {
            Ok(()) => 0u64,
            Err(_) => 1u64,
        };
        let flags = self.gather_fixed(&mine.to_le_bytes());
        if flags.iter().all(|&b| b == 0) {
            return Ok(());
        }
        self.agreed_error.store(true, Ordering::Relaxed);
        let encoded = match &status {
            Ok(()) => Vec::new(),
            Err(e) => encode_error(e),
        };
        let all = self.gather_var(&encoded);
        let first = all.iter().position(|e| !e.is_empty()).unwrap_or(0);
        if first == self.rank {
            return status;
        }
        Err(decode_error(&all[first]).unwrap_or_else(|| Error::Dist {
            message: format!("rank {first} failed with an error this rank could not read"),
        }))
    }

    /// Starts a call of a sharded function (generated code).
    pub fn begin(&self) {
        self.agreed_error.store(false, Ordering::Relaxed);
    }

    /// Ends a call of a sharded function (generated code): a result whose
    /// error every rank already agreed on is returned as it is; otherwise
    /// the ranks agree on their statuses, so that a rank that failed alone
    /// makes every rank return its error, and none waits for it.
    pub fn finish<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        match result {
            Err(e) if self.agreed_error.load(Ordering::Relaxed) => Err(e),
            Err(e) => match self.agree(Err(e)) {
                Err(e) => Err(e),
                Ok(()) => Err(Error::Dist { message: "an error was lost between ranks".into() }),
            },
            Ok(v) => {
                self.agree(Ok(()))?;
                Ok(v)
            }
        }
    }

    /// `bytes` of rank `root` on every rank (the same length everywhere;
    /// what the other ranks pass is overwritten). The root counts them as
    /// sent.
    pub fn broadcast(&self, root: usize, bytes: &mut [u8]) {
        if self.size == 1 || bytes.is_empty() {
            return;
        }
        if self.rank == root {
            self.count(bytes.len());
        }
        #[cfg(feature = "mpi")]
        if let Some(h) = &self.mpi {
            h.broadcast(root, bytes);
            return;
        }
        unreachable_world()
    }

    /// Every rank's values (the same count on every rank), in rank order.
    pub fn all_gather_i64(&self, mine: &[i64]) -> Vec<i64> {
        let bytes: Vec<u8> = mine.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.gather_fixed(&bytes).chunks(8).map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect()
    }

    /// Replaces `values` on every rank by the ranks' values combined with
    /// `op` element by element, in rank order (`((v0 op v1) op v2) ...`):
    /// the same bits on every rank. `values` has the same length everywhere.
    ///
    /// Every rank calls it. The message and what it receives are allocated
    /// fallibly, then the ranks agree on their status (`prior`, the
    /// caller's, then these allocations: an `Error::Alloc` naming
    /// `function` and `tensor`) in one [`World::agree`], so that every
    /// rank returns the first failing rank's error and none waits for
    /// ever; `values` is then left as it was.
    pub fn all_reduce<T: Elem>(
        &self,
        function: &str,
        tensor: &str,
        prior: Result<(), Error>,
        values: &mut [T],
        op: Combine,
    ) -> Result<(), Error> {
        self.all_reduce_parts(function, tensor, prior, &mut [&mut Values { values, op }])
    }

    /// Several all-reduces in one message: each part's values are combined
    /// over the ranks as [`World::all_reduce`] would, with its own
    /// operation and element type. The buffers and the agreement on the
    /// status are those of [`World::all_reduce`] (`tensor` names the parts
    /// in an `Error::Alloc`).
    pub fn all_reduce_parts(
        &self,
        function: &str,
        tensor: &str,
        prior: Result<(), Error>,
        parts: &mut [&mut dyn Part],
    ) -> Result<(), Error> {
        if self.size == 1 {
            return prior;
        }
        let stride = parts.iter().try_fold(0usize, |n, p| n.checked_add(p.byte_len()));
        let prior = match (stride, prior) {
            (None, Ok(())) => Err(alloc_error(function, tensor, usize::MAX)),
            (_, prior) => prior,
        };
        let stride = stride.unwrap_or(0);
        let (mut bytes, mut all) = self.message(function, tensor, prior, stride)?;
        if stride == 0 {
            return Ok(());
        }
        for p in parts.iter() {
            p.put(&mut bytes);
        }
        self.gather_into(&bytes, &mut all);
        let mut at = 0;
        for p in parts.iter_mut() {
            let len = p.byte_len();
            p.combine(&all, self.size, stride, at);
            at += len;
        }
        Ok(())
    }

    /// [`World::all_reduce`] of one value (a message of one value per
    /// rank, allocated as usual; the caller agrees on the status first).
    pub fn all_reduce_one<T: Elem>(&self, value: T, op: Combine) -> T {
        let mut v = [value];
        if self.size == 1 {
            return value;
        }
        let mut bytes = Vec::with_capacity(T::SIZE);
        value.put(&mut bytes);
        let all = self.gather_fixed(&bytes);
        Values { values: &mut v[..], op }.combine(&all, self.size, T::SIZE, 0);
        v[0]
    }

    /// `argmax` (or `argmin` when `max` is false) across ranks, point by
    /// point: each rank has, per point, its local extremum `best` and the
    /// global index `index` where it first occurs (-1 when its block had
    /// no term). Afterwards both hold the global result on every rank: the
    /// first index of the extremum over all ranks (blocks are in rank
    /// order, so the lowest rank with it wins ties), as the unsharded
    /// reduction chooses. For values that may be NaN see
    /// [`World::all_reduce_arg_skip`], whose buffers and agreement on the
    /// status it shares.
    #[allow(clippy::too_many_arguments)]
    pub fn all_reduce_arg<T: Elem + PartialOrd>(
        &self,
        function: &str,
        tensor: &str,
        prior: Result<(), Error>,
        best: &mut [T],
        index: &mut [i64],
        max: bool,
    ) -> Result<(), Error> {
        if self.size == 1 {
            return prior;
        }
        let skip = prior.and_then(|()| {
            let mut skip = self.filled(function, tensor, index.len(), 0i64)?;
            skip.copy_from_slice(index);
            Ok(skip)
        });
        match skip {
            Ok(skip) => self.all_reduce_arg_skip(function, tensor, Ok(()), best, index, &skip, max),
            Err(e) => self.all_reduce_arg_skip(function, tensor, Err(e), best, index, &[], max),
        }
    }

    /// [`World::all_reduce_arg`] as the unsharded reduction treats NaN:
    /// it keeps its first term (`!found || v > best`), so a NaN wins only
    /// as the very first term, and later NaNs never do. Per point, each
    /// rank has `best`, its extremum over the terms that are not NaN (NaN
    /// when none is), `index`, its block's own argmax/argmin (-1 when the
    /// block had no term), and `skip`, the first global index of `best`
    /// among the terms that are not NaN (-1 when none; `index` itself when
    /// the block's first term is not NaN). The first rank with a term
    /// decides alone when its first term is NaN (`index != skip`);
    /// afterwards `index` holds the global result on every rank, and
    /// `best` the value of the rank that decided it.
    ///
    /// Every rank calls it; the buffers and the agreement on the status
    /// (`prior`, then `best`, `index` and `skip` of unequal lengths, then
    /// the allocations) are those of [`World::all_reduce`].
    #[allow(clippy::too_many_arguments)]
    pub fn all_reduce_arg_skip<T: Elem + PartialOrd>(
        &self,
        function: &str,
        tensor: &str,
        prior: Result<(), Error>,
        best: &mut [T],
        index: &mut [i64],
        skip: &[i64],
        max: bool,
    ) -> Result<(), Error> {
        if self.size == 1 {
            return prior;
        }
        let step = T::SIZE + 16;
        let status = prior.and_then(|()| {
            if best.len() == index.len() && best.len() == skip.len() {
                Ok(())
            } else {
                Err(Error::Dist { message: format!("in `{function}`: an argmax across ranks of unequal parts") })
            }
        });
        let len = if status.is_ok() { best.len().checked_mul(step) } else { Some(0) };
        let status = match (len, status) {
            (None, Ok(())) => Err(alloc_error(function, tensor, usize::MAX)),
            (_, status) => status,
        };
        let (mut bytes, mut all) = self.message(function, tensor, status, len.unwrap_or(0))?;
        if best.is_empty() {
            return Ok(());
        }
        for ((b, i), j) in best.iter().zip(index.iter()).zip(skip) {
            b.put(&mut bytes);
            bytes.extend_from_slice(&i.to_le_bytes());
            bytes.extend_from_slice(&j.to_le_bytes());
        }
        self.gather_into(&bytes, &mut all);
        let part = best.len() * step;
        let word = |at: usize| i64::from_le_bytes(all[at..at + 8].try_into().unwrap_or([0; 8]));
        for p in 0..best.len() {
            // (value, index) so far; `None` before the first rank with a
            // term; `done` once a first term that is NaN decided.
            let mut now: Option<(T, i64)> = None;
            for r in 0..self.size {
                let at = r * part + p * step;
                let v = T::get(&all[at..at + T::SIZE]);
                let (i, j) = (word(at + T::SIZE), word(at + T::SIZE + 8));
                if i < 0 {
                    continue;
                }
                match now {
                    None if i != j => {
                        // The first term of the whole reduction is NaN.
                        now = Some((v, i));
                        break;
                    }
                    None => now = Some((v, i)),
                    Some((b, _)) => {
                        let better = if max { v > b } else { v < b };
                        if j >= 0 && better {
                            now = Some((v, j));
                        }
                    }
                }
            }
            match now {
                Some((v, i)) => {
                    best[p] = v;
                    index[p] = i;
                }
                None => index[p] = -1,
            }
        }
        Ok(())
    }
}

/// [`World::all_reduce`] of a tensor (generated code): `values`, this
/// rank's tensor of the same shape on every rank, combined over the ranks
/// in place. `prior` is the caller's status (a copy that failed); a tensor
/// not in standard layout is an error agreed like the others.
pub fn all_reduce_array<T: Elem, D: ndarray::Dimension>(
    world: &World,
    function: &str,
    tensor: &str,
    prior: Result<(), Error>,
    values: &mut ndarray::Array<T, D>,
    op: Combine,
) -> Result<(), Error> {
    match values.as_slice_mut() {
        Some(v) => world.all_reduce(function, tensor, prior, v, op),
        None => world.all_reduce(function, tensor, prior.and(Err(not_standard(function))), &mut [] as &mut [T], op),
    }
}

/// [`World::all_reduce_arg_skip`] of tensors (generated code): per point,
/// this rank's extremum `best`, its own position `index` (the result,
/// afterwards, on every rank) and the first position `skip` of its
/// extremum among the terms that are not NaN; all of the same shape, on
/// every rank. Tensors not in standard layout are an error agreed like
/// the others.
#[allow(clippy::too_many_arguments)]
pub fn all_reduce_arg_arrays<T: Elem + PartialOrd, D: ndarray::Dimension>(
    world: &World,
    function: &str,
    tensor: &str,
    prior: Result<(), Error>,
    best: &mut ndarray::Array<T, D>,
    index: &mut ndarray::Array<i64, D>,
    skip: &ndarray::Array<i64, D>,
    max: bool,
) -> Result<(), Error> {
    match (best.as_slice_mut(), index.as_slice_mut(), skip.as_slice()) {
        (Some(b), Some(i), Some(s)) => world.all_reduce_arg_skip(function, tensor, prior, b, i, s, max),
        _ => {
            let status = prior.and(Err(not_standard(function)));
            world.all_reduce_arg_skip(function, tensor, status, &mut [] as &mut [T], &mut [], &[], max)
        }
    }
}

fn not_standard(function: &str) -> Error {
    Error::Dist { message: format!("in `{function}`: a tensor to reduce across ranks not in standard layout") }
}

/// A buffer of `n` copies of `fill`, or `Err(Error::Alloc)` naming
/// `function` and `tensor` when the allocator has no room for it.
fn try_filled<T: Clone>(function: &str, tensor: &str, n: usize, fill: T) -> Result<Vec<T>, Error> {
    let mut v = Vec::new();
    let bytes = n.saturating_mul(std::mem::size_of::<T>());
    v.try_reserve_exact(n).map_err(|_| alloc_error(function, tensor, bytes))?;
    v.resize(n, fill);
    Ok(v)
}

/// A world of more than one without MPI cannot be built.
fn unreachable_world() -> ! {
    unreachable!("a World of more than one rank always has MPI")
}

/// How [`World::all_reduce`] combines two ranks' values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// `+` (wrapping for integers, as the language's sums are).
    Sum,
    /// `*` (wrapping for integers).
    Prod,
    /// The greater (NaN loses, as in a `max` reduction).
    Max,
    /// The smaller (NaN loses).
    Min,
    /// Logical and (`all`).
    And,
    /// Logical or (`any`).
    Or,
}

/// One value of [`World::all_reduce_parts`].
pub trait Part {
    /// Appends this rank's values.
    fn put(&self, out: &mut Vec<u8>);
    fn byte_len(&self) -> usize;
    /// Combines every rank's values, found at `at` in each rank's `stride`
    /// bytes of `all`, in rank order.
    fn combine(&mut self, all: &[u8], ranks: usize, stride: usize, at: usize);
}

/// Values combined with an operation, a [`Part`].
pub struct Values<'a, T: Elem> {
    pub values: &'a mut [T],
    pub op: Combine,
}

impl<T: Elem> Part for Values<'_, T> {
    fn put(&self, out: &mut Vec<u8>) {
        for v in self.values.iter() {
            v.put(out);
        }
    }

    fn byte_len(&self) -> usize {
        self.values.len() * T::SIZE
    }

    fn combine(&mut self, all: &[u8], ranks: usize, stride: usize, at: usize) {
        for (i, v) in self.values.iter_mut().enumerate() {
            let get = |r: usize| {
                let o = r * stride + at + i * T::SIZE;
                T::get(&all[o..o + T::SIZE])
            };
            let mut acc = get(0);
            for r in 1..ranks {
                acc = T::combine(self.op, acc, get(r));
            }
            *v = acc;
        }
    }
}

/// An element type that crosses between ranks.
pub trait Elem: Copy + 'static {
    const SIZE: usize;
    fn put(self, out: &mut Vec<u8>);
    fn get(bytes: &[u8]) -> Self;
    fn combine(op: Combine, a: Self, b: Self) -> Self;
}

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().unwrap_or([0; std::mem::size_of::<$t>()]))
            }
            fn combine(op: Combine, a: Self, b: Self) -> Self {
                match op {
                    Combine::Sum => a.wrapping_add(b),
                    Combine::Prod => a.wrapping_mul(b),
                    Combine::Max => if b > a { b } else { a },
                    Combine::Min => if b < a { b } else { a },
                    Combine::And => ((a != 0) && (b != 0)) as $t,
                    Combine::Or => ((a != 0) || (b != 0)) as $t,
                }
            }
        }
    )*};
}
int_elem!(i8, i16, i32, i64, u8, u32, u64);

macro_rules! float_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().unwrap_or([0; std::mem::size_of::<$t>()]))
            }
            fn combine(op: Combine, a: Self, b: Self) -> Self {
                match op {
                    Combine::Sum => a + b,
                    Combine::Prod => a * b,
                    // A reduction's NaN terms are skipped: NaN never wins.
                    Combine::Max => if b > a || a.is_nan() { b } else { a },
                    Combine::Min => if b < a || a.is_nan() { b } else { a },
                    Combine::And => if a != 0.0 && b != 0.0 { 1.0 } else { 0.0 },
                    Combine::Or => if a != 0.0 || b != 0.0 { 1.0 } else { 0.0 },
                }
            }
        }
    )*};
}
float_elem!(f32, f64);

impl Elem for bool {
    const SIZE: usize = 1;
    fn put(self, out: &mut Vec<u8>) {
        out.push(self as u8);
    }
    fn get(bytes: &[u8]) -> Self {
        bytes.first().is_some_and(|&b| b != 0)
    }
    fn combine(op: Combine, a: Self, b: Self) -> Self {
        match op {
            Combine::Sum | Combine::Or | Combine::Max => a || b,
            Combine::Prod | Combine::And | Combine::Min => a && b,
        }
    }
}

/// Checks at the entry of a sharded function, on every rank together:
/// `extents` holds, per sharded parameter axis, this rank's length, and
/// then every other extent the signature binds; `names` says what each is.
/// The first `sharded` entries are summed into the global extents; the
/// others must be the same on every rank. Returns `(global, offset)` per
/// sharded entry (the whole extent and where this rank's block starts), or
/// the same error on every rank.
pub fn agree_extents(
    world: &World,
    function: &str,
    local: Result<(), Error>,
    extents: &[i64],
    names: &[&str],
    sharded: usize,
) -> Result<Vec<(i64, i64)>, Error> {
    let show = |k: usize, v: i64| (format!("`{}`", names.get(k).copied().unwrap_or("?")), v.to_string());
    agree_table(world, function, local, extents, sharded, &show).map(|(parts, _)| parts)
}

/// [`agree_extents`] over values of any kind: `show(k, v)` names entry `k`
/// and writes its value `v` for the error. Also returns the table every
/// rank sees (rank `r`'s `mine` at `r * mine.len()`).
fn agree_table(
    world: &World,
    function: &str,
    local: Result<(), Error>,
    mine: &[i64],
    sharded: usize,
    show: &dyn Fn(usize, i64) -> (String, String),
) -> Result<(Vec<(i64, i64)>, Vec<i64>), Error> {
    world.agree(local)?;
    let all = world.all_gather_i64(mine);
    let n = mine.len();
    // Every rank sees the same table, so every rank finds the same first
    // difference (reported from the lowest rank's view): the same error.
    for k in sharded..n {
        for r in 1..world.size() {
            if all[r * n + k] != all[k] {
                let (what, v0) = show(k, all[k]);
                let (_, vr) = show(k, all[r * n + k]);
                return Err(Error::Dist {
                    message: format!("in `{function}`: {what} differs across ranks: {v0} on rank 0, {vr} on rank {r}"),
                });
            }
        }
    }
    let mut out = Vec::with_capacity(sharded);
    for k in 0..sharded {
        let global: i64 = (0..world.size()).map(|r| all[r * n + k]).sum();
        let offset: i64 = (0..world.rank()).map(|r| all[r * n + k]).sum();
        out.push((global, offset));
    }
    Ok((out, all))
}

/// The entry of a sharded function (generated code): `extents` holds this
/// rank's length of the sharded symbol, then every other dimension bound at
/// entry (`names` says which). Returns the symbol's whole extent and where
/// this rank's block starts, or the same error on every rank when another
/// dimension differs across ranks.
pub fn agree_block(world: &World, function: &str, extents: &[i64], names: &[&str]) -> Result<(i64, i64), Error> {
    agree_entry(world, function, extents, names, &[], &[], false).map(|(g, o, _)| (g, o))
}

/// [`agree_block`], with every rank's block length in rank order (for
/// halo exchanges): one more all-gather of one word per rank.
pub fn agree_block_holds(
    world: &World,
    function: &str,
    extents: &[i64],
    names: &[&str],
) -> Result<(i64, i64, Vec<i64>), Error> {
    agree_entry(world, function, extents, names, &[], &[], true)
}

/// A scalar parameter of a sharded function as the ranks compare it: the
/// same value on every rank, bit for bit, or an error on every rank.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Int(i64),
    /// An `f32` or `f64` (an `f32` widened exactly).
    Float(f64),
    Bool(bool),
}

impl Scalar {
    fn bits(self) -> i64 {
        match self {
            Scalar::Int(v) => v,
            Scalar::Float(v) => v.to_bits() as i64,
            Scalar::Bool(v) => v as i64,
        }
    }

    /// The value of this kind with these bits.
    fn with_bits(self, bits: i64) -> Scalar {
        match self {
            Scalar::Int(_) => Scalar::Int(bits),
            Scalar::Float(_) => Scalar::Float(f64::from_bits(bits as u64)),
            Scalar::Bool(_) => Scalar::Bool(bits != 0),
        }
    }
}

impl std::fmt::Display for Scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scalar::Int(v) => write!(f, "{v}"),
            Scalar::Float(v) => write!(f, "{v:?}"),
            Scalar::Bool(v) => write!(f, "{v}"),
        }
    }
}

/// The entry of a sharded function (generated code): the ranks agree that
/// their entry checks passed, then compare in one all-gather `extents`
/// (this rank's length of the sharded symbol, then every other dimension
/// bound at entry; `names` says which) and the scalar parameters
/// `scalars` (named `scalar_names`), which must be the same on every rank.
/// Returns the symbol's whole extent, where this rank's block starts and,
/// when `holds` asks (functions with halos), every rank's block length
/// (read from the same all-gather: the first extent is the block length);
/// or the same error on every rank: the first difference in the table
/// every rank sees (lowest rank's view).
pub fn agree_entry(
    world: &World,
    function: &str,
    extents: &[i64],
    names: &[&str],
    scalars: &[Scalar],
    scalar_names: &[&str],
    holds: bool,
) -> Result<(i64, i64, Vec<i64>), Error> {
    let mut mine = extents.to_vec();
    mine.extend(scalars.iter().map(|s| s.bits()));
    let show = |k: usize, v: i64| match k.checked_sub(extents.len()) {
        None => (format!("`{}`", names.get(k).copied().unwrap_or("?")), v.to_string()),
        Some(j) => (
            format!("the scalar parameter `{}`", scalar_names.get(j).copied().unwrap_or("?")),
            scalars.get(j).map_or(v.to_string(), |s| s.with_bits(v).to_string()),
        ),
    };
    let (parts, all) = agree_table(world, function, Ok(()), &mine, 1, &show)?;
    let (global, offset) = parts.first().copied().unwrap_or((0, 0));
    // Every rank's row of the table starts with its block length.
    let n = mine.len();
    let h = if holds && n > 0 && !extents.is_empty() {
        (0..world.size()).map(|r| all.get(r * n).copied().unwrap_or(0)).collect()
    } else if holds {
        vec![0; world.size()]
    } else {
        Vec::new()
    };
    Ok((global, offset, h))
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// An error as bytes, so that another rank can return the same one.
fn encode_error(e: &Error) -> Vec<u8> {
    let mut b = Vec::new();
    match e {
        Error::Shape { function, param, axis, symbol, expected, found } => {
            b.push(1);
            put_str(&mut b, function);
            put_str(&mut b, param);
            put_u64(&mut b, *axis as u64);
            put_str(&mut b, symbol);
            put_u64(&mut b, *expected as u64);
            put_u64(&mut b, *found as u64);
        }
        Error::Extent { function, message } => {
            b.push(2);
            put_str(&mut b, function);
            put_str(&mut b, message);
        }
        Error::Rank { function, target, expected, found } => {
            b.push(3);
            put_str(&mut b, function);
            put_str(&mut b, target);
            put_u64(&mut b, *expected as u64);
            put_u64(&mut b, *found as u64);
        }
        Error::Index { function, tensor, axis, index, len } => {
            b.push(4);
            put_str(&mut b, function);
            put_str(&mut b, tensor);
            put_u64(&mut b, *axis as u64);
            put_u64(&mut b, *index as u64);
            put_u64(&mut b, *len as u64);
        }
        Error::Assert { function, message } => {
            b.push(5);
            put_str(&mut b, function);
            put_str(&mut b, message);
        }
        Error::Arithmetic { function, message } => {
            b.push(6);
            put_str(&mut b, function);
            put_str(&mut b, message);
        }
        Error::Io { function, path, message } => {
            b.push(7);
            put_str(&mut b, function);
            put_str(&mut b, path);
            put_str(&mut b, message);
        }
        Error::NoDevice => b.push(8),
        Error::Device { operation, message } => {
            b.push(9);
            put_str(&mut b, operation);
            put_str(&mut b, message);
        }
        Error::Dist { message } => {
            b.push(10);
            put_str(&mut b, message);
        }
        Error::Alloc { function, tensor, bytes } => {
            b.push(11);
            put_str(&mut b, function);
            put_str(&mut b, tensor);
            put_u64(&mut b, *bytes as u64);
        }
    }
    b
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn u64(&mut self) -> Option<u64> {
        let (head, rest) = self.0.split_at_checked(8)?;
        self.0 = rest;
        Some(u64::from_le_bytes(head.try_into().ok()?))
    }
    fn string(&mut self) -> Option<String> {
        let n = usize::try_from(self.u64()?).ok()?;
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        String::from_utf8(head.to_vec()).ok()
    }
}

fn decode_error(bytes: &[u8]) -> Option<Error> {
    let (&tag, rest) = bytes.split_first()?;
    let mut r = Reader(rest);
    Some(match tag {
        1 => Error::Shape {
            function: r.string()?,
            param: r.string()?,
            axis: r.u64()? as usize,
            symbol: r.string()?,
            expected: r.u64()? as usize,
            found: r.u64()? as usize,
        },
        2 => Error::Extent { function: r.string()?, message: r.string()? },
        3 => Error::Rank {
            function: r.string()?,
            target: r.string()?,
            expected: r.u64()? as usize,
            found: r.u64()? as usize,
        },
        4 => Error::Index {
            function: r.string()?,
            tensor: r.string()?,
            axis: r.u64()? as usize,
            index: r.u64()? as i64,
            len: r.u64()? as usize,
        },
        5 => Error::Assert { function: r.string()?, message: r.string()? },
        6 => Error::Arithmetic { function: r.string()?, message: r.string()? },
        7 => Error::Io { function: r.string()?, path: r.string()?, message: r.string()? },
        8 => Error::NoDevice,
        9 => Error::Device { operation: r.string()?, message: r.string()? },
        10 => Error::Dist { message: r.string()? },
        11 => Error::Alloc { function: r.string()?, tensor: r.string()?, bytes: r.u64()? as usize },
        _ => return None,
    })
}

#[cfg(feature = "mpi")]
mod mpi_world;

mod halo;
pub use halo::{extend, extend_start, halo_packed, halo_start, overlap, slab_geometry, Extended, HaloExchange};

#[cfg(test)]
mod tests {
    use super::*;

    /// `extend_start`'s copy in a world of one: the halo rows are zeros,
    /// the first and last `edge` rows of the block are the block's (all of
    /// it when the edges meet); the world keeps the copy and a call of the
    /// same shape gets the same array back (its halo rows zeroed again),
    /// one of another shape a fresh one.
    #[test]
    fn extended_copies_hold_the_edge_rows_and_are_kept_between_calls() {
        use ndarray::{s, Array2};
        let w = World::alone();
        let input = Array2::from_shape_fn((10, 3), |(i, j)| (i * 3 + j) as f64 + 1.0);
        let check = |e: &Array2<f64>, input: &Array2<f64>, lo: usize, hi: usize, edge: usize| {
            let local = input.nrows();
            assert_eq!(e.dim(), (local + lo + hi, input.ncols()));
            assert!(e.slice(s![..lo, ..]).iter().chain(e.slice(s![lo + local.., ..]).iter()).all(|&v| v == 0.0));
            let rows: Vec<usize> = if edge.saturating_mul(2) >= local {
                (0..local).collect()
            } else {
                (0..edge).chain(local - edge..local).collect()
            };
            for r in rows {
                assert_eq!(e.row(lo + r), input.row(r), "row {r}, edge {edge}");
            }
        };
        let at = {
            let (mut e, mut ex) = extend_start(&w, "f", "u", input.view(), 0, 1, 2, 2, &[10]).unwrap();
            ex.complete("f", &mut e).unwrap();
            check(&e, &input, 1, 2, 2);
            // A write into a halo row, to see it zeroed at the next call.
            e[[0, 1]] = 5.0;
            e.as_ptr()
        };
        let other = input.mapv(|v| -v);
        {
            let (e, _ex) = extend_start(&w, "f", "u", other.view(), 0, 1, 2, 3, &[10]).unwrap();
            assert_eq!(e.as_ptr(), at, "the kept copy");
            check(&e, &other, 1, 2, 3);
        }
        // Another shape (a thin block: all of it), then another tensor.
        let thin = input.slice(s![..4, ..]).to_owned();
        let (e, _ex) = extend_start(&w, "f", "u", thin.view(), 0, 1, 2, 2, &[4]).unwrap();
        check(&e, &thin, 1, 2, 2);
        let (c, _cx) = extend_start(&w, "f", "c", input.view(), 0, 2, 0, usize::MAX, &[10]).unwrap();
        check(&c, &input, 2, 0, usize::MAX);
    }

    #[test]
    fn blocks_are_balanced_and_cover_in_order() {
        for n in 0..20 {
            for size in 1..6 {
                let mut next = 0;
                for rank in 0..size {
                    let b = block(n, rank, size);
                    assert_eq!(b.start, next);
                    let len = b.len();
                    assert!(len == n / size || len == n / size + 1);
                    assert_eq!(len, n / size + usize::from(rank < n % size));
                    next = b.end;
                }
                assert_eq!(next, n);
            }
        }
        assert_eq!(block(5, 3, 2), 5..5);
        assert_eq!(block(7, 0, 3), 0..3);
        assert_eq!(block(7, 1, 3), 3..5);
        assert_eq!(block(7, 2, 3), 5..7);
    }

    #[test]
    fn a_world_of_one_keeps_its_values_and_sends_nothing() {
        let w = World::alone();
        assert_eq!((w.rank(), w.size()), (0, 1));
        let mut v = [1.5f32, 2.0];
        w.all_reduce("f", "v", Ok(()), &mut v, Combine::Sum).unwrap();
        assert_eq!(v, [1.5, 2.0]);
        assert_eq!(w.all_gather_i64(&[3, 4]), vec![3, 4]);
        let e = Error::Assert { function: "f".into(), message: "m".into() };
        assert_eq!(w.agree(Err(e.clone())), Err(e.clone()));
        assert_eq!(w.bytes_sent(), 0);
        let g = agree_extents(&w, "f", Ok(()), &[5, 7], &["B", "K"], 1).unwrap();
        assert_eq!(g, vec![(5, 0)]);
        // Alone, nothing is sent and no message is allocated: a limit of
        // no bytes changes nothing, and a caller's error comes back.
        w.set_buffer_limit(Some(0));
        w.all_reduce("f", "v", Ok(()), &mut v, Combine::Max).unwrap();
        let x = ndarray::Array1::from_vec(vec![1.0f64, 2.0]);
        assert_eq!(extend(&w, "f", "x", x.view(), 0, 1, 1, &[2]).unwrap().to_vec(), vec![0.0, 1.0, 2.0, 0.0]);
        assert_eq!(w.all_reduce("f", "v", Err(e.clone()), &mut v, Combine::Max), Err(e));
    }

    #[test]
    fn buffers_beyond_the_limit_or_the_address_space_are_alloc_errors() {
        let w = World::alone();
        let alloc = |bytes| Err(Error::Alloc { function: "f".into(), tensor: "t".into(), bytes });
        assert_eq!(w.room("f", "t", Some(1 << 62)).map(|_| ()), alloc(1 << 62));
        assert_eq!(w.room("f", "t", None).map(|_| ()), alloc(usize::MAX));
        assert_eq!(w.room("f", "t", Some(64)).map(|v| v.capacity() >= 64), Ok(true));
        w.set_buffer_limit(Some(63));
        assert_eq!(w.room("f", "t", Some(64)).map(|_| ()), alloc(64));
        assert_eq!(w.filled("f", "t", 8, 0u64).map(|_| ()), alloc(64));
        assert_eq!(w.filled("f", "t", 7, 0u64), Ok(vec![0; 7]));
        w.set_buffer_limit(None);
        assert_eq!(w.filled("f", "t", 8, 1u64), Ok(vec![1; 8]));
    }

    #[test]
    fn init_twice_gives_worlds() {
        let a = World::init().unwrap();
        let b = World::init().unwrap();
        assert_eq!(a.size(), b.size());
    }

    #[test]
    fn errors_cross_ranks_unchanged() {
        let errors = vec![
            Error::Shape {
                function: "f".into(),
                param: "x".into(),
                axis: 1,
                symbol: "K".into(),
                expected: 3,
                found: 4,
            },
            Error::Extent { function: "f".into(), message: "m".into() },
            Error::Rank { function: "f".into(), target: "[f32; N]".into(), expected: 1, found: 2 },
            Error::Index { function: "f".into(), tensor: "t".into(), axis: 0, index: -3, len: 2 },
            Error::Assert { function: "f".into(), message: "bad".into() },
            Error::Arithmetic { function: "f".into(), message: "overflow".into() },
            Error::Io { function: "f".into(), path: "p".into(), message: "m".into() },
            Error::NoDevice,
            Error::Device { operation: "o".into(), message: "m".into() },
            Error::Dist { message: "d".into() },
            Error::Alloc { function: "f".into(), tensor: "t".into(), bytes: 1 << 53 },
        ];
        for e in errors {
            assert_eq!(decode_error(&encode_error(&e)), Some(e));
        }
        assert_eq!(decode_error(&[4, 1, 2]), None);
    }

    #[test]
    fn combining_follows_the_reductions() {
        assert_eq!(f32::combine(Combine::Max, f32::NAN, 1.0), 1.0);
        assert_eq!(f32::combine(Combine::Max, 1.0, f32::NAN), 1.0);
        assert_eq!(f64::combine(Combine::Min, 2.0, -1.0), -1.0);
        assert_eq!(i32::combine(Combine::Sum, i32::MAX, 1), i32::MIN);
        assert_eq!(u8::combine(Combine::Prod, 16, 17), 16);
        assert!(bool::combine(Combine::Or, false, true));
        assert!(!bool::combine(Combine::And, false, true));
    }
}
