//! Halo exchanges along a sharded axis: the blocking exchange of a
//! definition's extended copy ([`extend`]), and the exchange of a
//! recurrence's step, started ([`halo_start`]) and waited for
//! ([`HaloExchange::wait`]) so that the rows that read no halo row are
//! computed in between.

use super::*;

impl World {
    /// Halo exchange along a sharded axis: sends `to_prev` to the previous
    /// rank that holds rows and `to_next` to the next one, and receives
    /// their rows into `from_prev` and `from_next`. `holds` is every rank's
    /// count of rows in rank order (ranks without rows are skipped: their
    /// neighbours exchange across them). An edge rank sends nothing
    /// outward and its buffer outward stays as it is.
    ///
    /// Every rank calls it (ranks without rows too). The messages are
    /// allocated fallibly, then the ranks agree on their status (`prior`,
    /// then the allocations: an `Error::Alloc` naming `function` and
    /// `tensor`) before any rank sends, as [`World::all_reduce`] does.
    #[allow(clippy::too_many_arguments)]
    pub fn halo<T: Elem>(
        &self,
        function: &str,
        tensor: &str,
        prior: Result<(), Error>,
        holds: &[i64],
        (to_prev, to_next): (&[T], &[T]),
        (from_prev, from_next): (&mut [T], &mut [T]),
    ) -> Result<(), Error> {
        if self.size == 1 {
            return prior;
        }
        let me = self.rank;
        let bytes = |n: usize| n.checked_mul(T::SIZE);
        let buffers = prior.and_then(|()| {
            if holds.len() != self.size {
                return Err(Error::Dist {
                    message: format!("in `{function}`: a halo exchange without every rank's block length"),
                });
            }
            let mut up = self.room(function, tensor, bytes(to_next.len()))?;
            let mut down = self.room(function, tensor, bytes(to_prev.len()))?;
            let most = bytes(from_prev.len().max(from_next.len()));
            let mut got = self.room(function, tensor, most)?;
            for v in to_next {
                v.put(&mut up);
            }
            for v in to_prev {
                v.put(&mut down);
            }
            got.resize(most.unwrap_or(0), 0);
            Ok((up, down, got))
        });
        let (up, down, mut got) = self.agreed(function, buffers)?;
        if holds[me] <= 0 {
            return Ok(());
        }
        let prev = (0..me).rev().find(|&r| holds[r] > 0);
        let next = (me + 1..self.size).find(|&r| holds[r] > 0);
        // Upward first (to the next rank, from the previous), then downward.
        for (dest, src, send, into) in [(next, prev, &up, &mut *from_prev), (prev, next, &down, &mut *from_next)] {
            let want = into.len() * T::SIZE;
            if dest.is_some() {
                self.count(send.len());
            }
            #[cfg(feature = "mpi")]
            if let Some(h) = &self.mpi {
                if h.send_recv(dest, send, src, &mut got[..want]) {
                    for (o, c) in into.iter_mut().zip(got[..want].chunks(T::SIZE)) {
                        *o = T::get(c);
                    }
                }
                continue;
            }
            let _ = (src, want, &mut got);
            unreachable_world();
        }
        Ok(())
    }

    /// The halo rows of a sharded axis, from however many ranks hold them
    /// (a rank thinner than the halo passes on what it has, and the rows
    /// beyond it come from the ranks after it). `holds` is every rank's
    /// block length in rank order; this rank wants the `lo` rows before its
    /// block and the `hi` rows after it, those inside the whole axis.
    /// `rows(a, b, out)` appends this rank's own rows `a..b` (of its
    /// block), `per_row` values each, encoded ([`Elem::put`]), to `out`
    /// (whose room is reserved beforehand). Received rows go into `before`
    /// (`lo` rows, the row just before the block last) and `after` (`hi`
    /// rows, the row just after the block first); rows beyond the ends of
    /// the axis, and everything on a rank without rows, stay as they are.
    /// Each rank sends every row another rank wants once: at most `lo +
    /// hi` rows per rank that wants them, one message per rank pair that
    /// exchanges rows.
    ///
    /// Every rank calls it (ranks without rows too), unless the world has
    /// one rank or `lo` and `hi` are zero. The buffers are allocated
    /// fallibly before anything is sent, and the ranks agree on their
    /// status (`prior`, the caller's, then this call's allocations: an
    /// `Error::Alloc` naming `function` and `tensor`) in one
    /// [`World::agree`], so that a rank that cannot take part makes every
    /// rank return its error instead of leaving them waiting.
    #[allow(clippy::too_many_arguments)]
    pub fn halo_rows<T: Elem>(
        &self,
        function: &str,
        tensor: &str,
        prior: Result<(), Error>,
        holds: &[i64],
        lo: usize,
        hi: usize,
        per_row: usize,
        rows: &dyn Fn(usize, usize, &mut Vec<u8>),
        before: &mut [T],
        after: &mut [T],
    ) -> Result<(), Error> {
        let size = self.size;
        if size == 1 || (lo == 0 && hi == 0) {
            return prior;
        }
        let mut status = prior;
        if status.is_ok() && holds.len() != size {
            status = Err(no_holds(function));
        }
        let (plan, start) = if status.is_ok() { halo_plan(self.rank, holds, lo, hi) } else { (Vec::new(), Vec::new()) };
        let me = self.rank;
        let bytes = |r: &Option<Range<usize>>| r.as_ref().map_or(0, |r| r.len() * per_row * T::SIZE);
        let most_sent = plan.iter().map(|r| bytes(&r.send)).max().unwrap_or(0);
        let most_received = plan.iter().map(|r| bytes(&r.recv)).max().unwrap_or(0);
        let mut sending: Vec<u8> = Vec::new();
        let mut receiving: Vec<u8> = Vec::new();
        if status.is_ok() {
            match (self.room(function, tensor, Some(most_sent)), self.room(function, tensor, Some(most_received))) {
                (Ok(s), Ok(r)) => {
                    (sending, receiving) = (s, r);
                    // Within the reserved room: no allocation.
                    receiving.resize(most_received, 0);
                }
                (Err(e), _) | (_, Err(e)) => status = Err(e),
            }
        }
        self.agree(status)?;
        for round in plan {
            sending.clear();
            if let Some(r) = &round.send {
                rows(r.start - start[me], r.end - start[me], &mut sending);
                self.count(sending.len());
            }
            let wanted = bytes(&round.recv);
            #[cfg(feature = "mpi")]
            if let Some(h) = &self.mpi {
                let got = h.send_recv(
                    round.send.as_ref().and(round.dest),
                    &sending,
                    round.recv.as_ref().and(round.src),
                    &mut receiving[..wanted],
                );
                if let (true, Some(r)) = (got, round.recv) {
                    // Where the first row received goes in its buffer.
                    let (buf, at) = if round.up {
                        (&mut *before, (r.start + lo - start[me]) * per_row)
                    } else {
                        (&mut *after, (r.start - start[me + 1]) * per_row)
                    };
                    for (k, c) in receiving[..wanted].chunks(T::SIZE).enumerate() {
                        if let Some(o) = buf.get_mut(at + k) {
                            *o = T::get(c);
                        }
                    }
                }
                continue;
            }
            let _ = (wanted, &before, &after, &receiving, round.up, round.dest, round.src);
            unreachable_world();
        }
        Ok(())
    }
}

fn no_holds(function: &str) -> Error {
    Error::Dist { message: format!("in `{function}`: a halo exchange without every rank's block length") }
}

/// One message pair of a halo exchange: this rank sends its global rows
/// `send` to `dest` and receives the global rows `recv` from `src` (either
/// may be absent); `up`: rows travel to higher ranks (they go before the
/// receiver's block), else to lower ranks (after it).
pub(super) struct Round {
    pub up: bool,
    pub dest: Option<usize>,
    pub src: Option<usize>,
    pub send: Option<Range<usize>>,
    pub recv: Option<Range<usize>>,
}

/// The messages of a halo exchange from rank `me`'s point of view, and
/// where every rank's block starts (`start[r]`, then the whole length):
/// each rank that holds rows wants the `lo` rows before its block and the
/// `hi` rows after it (those inside the axis), and gets every one from
/// the rank that holds it. Every rank computes the same table, so each
/// send has its receive; rank pairs `d` apart, upward then downward, for
/// `d` in `1..size`.
pub(super) fn halo_plan(me: usize, holds: &[i64], lo: usize, hi: usize) -> (Vec<Round>, Vec<usize>) {
    let size = holds.len();
    let len: Vec<usize> = holds.iter().map(|&h| h.max(0) as usize).collect();
    let mut start = vec![0usize; size + 1];
    for (r, l) in len.iter().enumerate() {
        start[r + 1] = start[r] + l;
    }
    let total = start[size];
    // The global rows rank `q` wants before and after its block.
    let want = |q: usize, up: bool| -> Range<usize> {
        if len[q] == 0 {
            return 0..0;
        }
        if up {
            start[q].saturating_sub(lo)..start[q]
        } else {
            start[q + 1]..(start[q + 1] + hi).min(total)
        }
    };
    let held = |q: usize| start[q]..start[q + 1];
    let meet = |a: Range<usize>, b: Range<usize>| -> Option<Range<usize>> {
        let r = a.start.max(b.start)..a.end.min(b.end);
        (r.start < r.end).then_some(r)
    };
    let mut plan = Vec::new();
    for d in 1..size {
        for up in [true, false] {
            let (dest, src) = if up {
                ((me + d < size).then_some(me + d), me.checked_sub(d))
            } else {
                (me.checked_sub(d), (me + d < size).then_some(me + d))
            };
            let send = dest.and_then(|q| meet(want(q, up), held(me)));
            let recv = src.and_then(|p| meet(want(me, up), held(p)));
            if send.is_some() || recv.is_some() {
                plan.push(Round { up, dest, src, send, recv });
            }
        }
    }
    (plan, start)
}

/// `input` copied into a fresh array with `lo` zero rows before it and
/// `hi` after it along `axis` (the halos of [`extend`] and
/// [`extend_start`], filled by the exchange); allocated fallibly.
fn extended_copy<T: Elem + Default + Send, D: ndarray::Dimension>(
    function: &str,
    tensor: &str,
    input: &ndarray::ArrayView<'_, T, D>,
    axis: usize,
    lo: usize,
    hi: usize,
) -> Result<ndarray::Array<T, D>, Error> {
    use ndarray::{Axis, Slice};
    if axis >= input.ndim() {
        return Err(Error::Dist { message: format!("in `{function}`: a halo along a missing axis") });
    }
    let local = input.len_of(Axis(axis));
    let mut shape = input.raw_dim();
    shape[axis] = local + lo + hi;
    let mut out = crate::pool::zeros(function, tensor, shape, T::default())?;
    out.slice_axis_mut(Axis(axis), Slice::from(lo..lo + local)).assign(input);
    Ok(out)
}

/// `input` (this rank's block of a sharded tensor along `axis`) with the
/// `lo` rows of the whole tensor before its block and the `hi` rows after
/// it (zeros beyond the ends of the axis, and from as many ranks as hold
/// them): what a definition reading it at offsets along the axis needs
/// (generated code). `holds` is every rank's block length. Every rank
/// calls it; the copy and the halo buffers are allocated fallibly
/// (`Error::Alloc` naming `function` and `tensor`) and the ranks agree on
/// their status before any rank sends.
#[allow(clippy::too_many_arguments)]
pub fn extend<T: Elem + Default + Send, D: ndarray::Dimension>(
    world: &World,
    function: &str,
    tensor: &str,
    input: ndarray::ArrayView<'_, T, D>,
    axis: usize,
    lo: usize,
    hi: usize,
    holds: &[i64],
) -> Result<ndarray::Array<T, D>, Error> {
    use ndarray::{Axis, Slice};
    let local = if axis < input.ndim() { input.len_of(Axis(axis)) } else { 0 };
    let per_row: usize = if local > 0 { input.len() / local } else { 0 };
    // Nothing to exchange: no halo buffers.
    let alone = world.size() == 1 || (lo == 0 && hi == 0);
    let prepared = (|| -> Result<_, Error> {
        let out = extended_copy(function, tensor, &input, axis, lo, hi)?;
        if alone {
            return Ok((out, Vec::new(), Vec::new()));
        }
        let from_prev = world.filled(function, tensor, lo * per_row, T::default())?;
        let from_next = world.filled(function, tensor, hi * per_row, T::default())?;
        Ok((out, from_prev, from_next))
    })();
    if alone {
        return prepared.map(|(out, _, _)| out);
    }
    let (mut out, mut from_prev, mut from_next) = match prepared {
        Ok(p) => p,
        // Every rank takes part in the agreement of `halo_rows`.
        Err(e) => return world.agreed(function, Err(e)),
    };
    let rows = |a: usize, b: usize, bytes: &mut Vec<u8>| {
        for v in input.slice_axis(Axis(axis), Slice::from(a..b)).iter() {
            v.put(bytes);
        }
    };
    world.halo_rows(function, tensor, Ok(()), holds, lo, hi, per_row, &rows, &mut from_prev, &mut from_next)?;
    if local == 0 {
        return Ok(out);
    }
    for (o, v) in out.slice_axis_mut(Axis(axis), Slice::from(0..lo)).iter_mut().zip(from_prev) {
        *o = v;
    }
    for (o, v) in out.slice_axis_mut(Axis(axis), Slice::from(lo + local..lo + local + hi)).iter_mut().zip(from_next) {
        *o = v;
    }
    Ok(out)
}

/// The indices of rows `rows` (along `axis`) of the slab at `at` of axis
/// `fixed` of an array of `shape`, in row-major order of the other axes.
fn slab_points<const N: usize>(
    shape: [usize; N],
    (fixed, at, axis): (usize, usize, usize),
    rows: Range<usize>,
    f: &mut dyn FnMut([usize; N]),
) {
    let free: Vec<usize> = (0..N).filter(|&a| a != fixed && a != axis).collect();
    let per_row: usize = free.iter().map(|&a| shape[a]).product();
    let mut idx = [0usize; N];
    idx[fixed] = at;
    for r in rows {
        idx[axis] = r;
        for q in 0..per_row {
            let mut rest = q;
            for &a in free.iter().rev() {
                idx[a] = rest % shape[a];
                rest /= shape[a];
            }
            f(idx);
        }
    }
}

/// The halo exchange of a recurrence's step while it is in flight
/// (generated code): [`halo_start`] posts it, the rows that read no halo
/// row are computed, then [`HaloExchange::wait`] completes it and writes
/// the received rows into the halos.
///
/// It owns the buffers of its messages. Dropped before its wait (an error
/// returned between the two), it waits for its messages: every rank
/// posted its side of the exchange after the ranks agreed on their
/// status, so this completes, and no request outlives its buffer.
pub struct HaloExchange {
    /// The received messages: the buffer, the global rows it holds, and
    /// whether they go before this rank's block (else after it).
    incoming: Vec<(Vec<u8>, Range<usize>, bool)>,
    /// The sent messages, kept until they have gone.
    outgoing: Vec<Vec<u8>>,
    #[cfg(feature = "mpi")]
    requests: Option<mpi_world::Requests>,
    /// The slab the exchange writes: position `at` of axis `fixed`, rows
    /// along `axis` (`lo` halo rows, then this rank's block, whose first
    /// global row is `first`, of `local` rows).
    slab: (usize, usize, usize),
    lo: usize,
    local: usize,
    first: usize,
}

impl Drop for HaloExchange {
    fn drop(&mut self) {
        // Dropped before its wait (an early return): the messages complete
        // before their buffers go (the partners posted theirs).
        #[cfg(feature = "mpi")]
        if let Some(r) = self.requests.as_mut() {
            let _ = r.wait("a halo exchange");
        }
    }
}

impl HaloExchange {
    /// An exchange with nothing to exchange (a world of one, no halo).
    fn none() -> HaloExchange {
        HaloExchange {
            incoming: Vec::new(),
            outgoing: Vec::new(),
            #[cfg(feature = "mpi")]
            requests: None,
            slab: (0, 0, 0),
            lo: 0,
            local: 0,
            first: 0,
        }
    }

    /// Waits until the exchange is complete, then copies the received rows
    /// into the halos of `store` (the store [`halo_start`] read; rows
    /// beyond the ends of the axis stay as they are). Sends nothing and
    /// agrees on nothing: every rank's part was posted at the start.
    ///
    /// # Safety
    /// No other thread accesses the store; it is the store (and shape)
    /// given to [`halo_start`].
    pub unsafe fn wait<T: Elem + Default, const N: usize>(
        mut self,
        function: &str,
        store: &crate::rec::Store<'_, T, N>,
    ) -> Result<(), Error> {
        #[cfg(feature = "mpi")]
        if let Some(r) = self.requests.as_mut() {
            r.wait(function)?;
        }
        let _ = (function, &self.outgoing);
        let shape = store.shape();
        for (bytes, rows, before) in std::mem::take(&mut self.incoming) {
            // Storage positions of the rows received.
            let at = if before {
                rows.start + self.lo - self.first
            } else {
                self.lo + self.local + (rows.start - (self.first + self.local))
            };
            let mut k = 0;
            slab_points(shape, self.slab, at..at + rows.len(), &mut |i| {
                if let Some(c) = bytes.get(k * T::SIZE..(k + 1) * T::SIZE) {
                    store.set(i, T::get(c));
                }
                k += 1;
            });
        }
        Ok(())
    }
}

impl HaloExchange {
    /// Waits until the exchange [`extend_start`] posted is complete, then
    /// copies the received rows into the halo rows of `out` (the copy it
    /// returned). Sends nothing and agrees on nothing. A second call
    /// finds nothing left to do.
    pub fn complete<T: Elem, D: ndarray::Dimension>(
        &mut self,
        function: &str,
        out: &mut ndarray::Array<T, D>,
    ) -> Result<(), Error> {
        use ndarray::{Axis, Slice};
        #[cfg(feature = "mpi")]
        if let Some(r) = self.requests.as_mut() {
            r.wait(function)?;
        }
        let _ = function;
        let axis = self.slab.2;
        for (bytes, rows, before) in std::mem::take(&mut self.incoming) {
            let at = if before {
                rows.start + self.lo - self.first
            } else {
                self.lo + self.local + (rows.start - (self.first + self.local))
            };
            if axis >= out.ndim() || at + rows.len() > out.len_of(Axis(axis)) {
                return Err(Error::Dist {
                    message: format!("in `{function}`: a halo exchange of a tensor of another shape"),
                });
            }
            let mut values = bytes.chunks(T::SIZE);
            for o in out.slice_axis_mut(Axis(axis), Slice::from(at..at + rows.len())).iter_mut() {
                if let Some(c) = values.next() {
                    *o = T::get(c);
                }
            }
        }
        Ok(())
    }
}

/// Whether a halo exchange runs while the interior rows are computed
/// (the default); `EINLANG_HALO_OVERLAP=0` in the environment completes
/// it in [`halo_start`] instead, as the blocking exchange did (to compare
/// the two, or to rule the overlap out). Read once per process.
pub fn overlap() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("EINLANG_HALO_OVERLAP").map_or(true, |v| v != "0"))
}

/// Starts the halo exchange of a recurrence's earlier step (generated
/// code): in the slab of `store` at position `at` of `fixed` (a slot of
/// the time axis), the rows along `axis` are `lo` halo rows, this rank's
/// block of `holds[rank]` rows, then `hi` halo rows; the halos are to hold
/// the rows of the ranks before and after (from several ranks when blocks
/// are thinner than the halo; those beyond the ends of the axis stay as
/// they are). In two parts, so that the rows whose reads stay inside this
/// rank's block can be computed while the halo rows travel. Packs the rows every neighbour wants (the same messages as
/// [`World::halo_rows`], so the same bytes: counted here) and posts every
/// send and receive, nonblocking; [`HaloExchange::wait`] completes them.
/// Every rank calls it; the buffers are allocated fallibly and the ranks
/// agree on their status (`prior`, then a store of another shape, a
/// buffer the allocator has no room for: `Error::Alloc` naming `function`
/// and `tensor`) before any rank posts anything.
///
/// # Safety
/// No other thread accesses the store; `store` has the described shape.
#[allow(clippy::too_many_arguments)]
pub unsafe fn halo_start<T: Elem + Default, const N: usize>(
    world: &World,
    function: &str,
    tensor: &str,
    store: &crate::rec::Store<'_, T, N>,
    fixed: usize,
    at: usize,
    axis: usize,
    lo: usize,
    hi: usize,
    holds: &[i64],
) -> Result<HaloExchange, Error> {
    if world.size() == 1 || (lo == 0 && hi == 0) {
        return Ok(HaloExchange::none());
    }
    let me = world.rank();
    let local = holds.get(me).copied().unwrap_or(0).max(0) as usize;
    let shape = store.shape();
    let prepared = (|| -> Result<(HaloExchange, Vec<Round>), Error> {
        let fits =
            N > 0 && fixed < N && axis < N && fixed != axis && at < shape[fixed] && shape[axis] == lo + local + hi;
        if !fits {
            return Err(Error::Dist {
                message: format!("in `{function}`: a halo exchange of a tensor of another shape"),
            });
        }
        if holds.len() != world.size() {
            return Err(no_holds(function));
        }
        let per_row: usize = (0..N).filter(|&a| a != fixed && a != axis).map(|a| shape[a]).product();
        let (plan, start) = halo_plan(me, holds, lo, hi);
        let bytes = |r: &Range<usize>| {
            // Within MPI's count of one message (checked here, before the
            // ranks agree, so that no rank fails after posting).
            r.len().checked_mul(per_row).and_then(|n| n.checked_mul(T::SIZE)).filter(|&b| b <= i32::MAX as usize)
        };
        let mut ex = HaloExchange::none();
        (ex.slab, ex.lo, ex.local, ex.first) = ((fixed, at, axis), lo, local, start[me]);
        for round in &plan {
            if let Some(r) = &round.send {
                let mut out = world.room(function, tensor, bytes(r))?;
                slab_points(shape, ex.slab, lo + r.start - start[me]..lo + r.end - start[me], &mut |i| {
                    store.get(i).put(&mut out)
                });
                ex.outgoing.push(out);
            }
            if let Some(r) = &round.recv {
                let want = bytes(r);
                let mut buf = world.room(function, tensor, want)?;
                // Within the reserved room: no allocation.
                buf.resize(want.unwrap_or(0), 0);
                ex.incoming.push((buf, r.clone(), round.up));
            }
        }
        Ok((ex, plan))
    })();
    let (mut ex, plan) = world.agreed(function, prepared)?;
    post(world, function, &plan, &mut ex)?;
    Ok(ex)
}

/// Posts the messages of `plan` whose buffers `ex` holds (receives first,
/// then sends, in the plan's order on every rank), counting the bytes
/// sent; completes them at once unless the exchange overlaps
/// ([`overlap`]).
///
/// # Safety
/// The buffers stay where they are until the requests complete (`ex`
/// owns them and waits for the requests when dropped).
unsafe fn post(world: &World, function: &str, plan: &[Round], ex: &mut HaloExchange) -> Result<(), Error> {
    #[cfg(feature = "mpi")]
    if world.mpi.is_some() {
        let mut requests = mpi_world::Requests::new();
        let mut k = 0;
        for round in plan {
            if let (Some(_), Some(src)) = (&round.recv, round.src) {
                requests.receive(function, src, &mut ex.incoming[k].0)?;
                k += 1;
            }
        }
        let mut k = 0;
        for round in plan {
            if let (Some(_), Some(dest)) = (&round.send, round.dest) {
                world.count(ex.outgoing[k].len());
                requests.send(function, dest, &ex.outgoing[k])?;
                k += 1;
            }
        }
        if !overlap() {
            requests.wait(function)?;
        }
        ex.requests = Some(requests);
        return Ok(());
    }
    let _ = (world, function, plan, ex);
    unreachable_world()
}

/// [`extend`] in two parts (generated code), for a definition whose rows
/// that read no halo row read `input` itself: the copy, with room for
/// `lo` rows before the block along `axis` and `hi` after it, holds at
/// once the first and the last `edge` rows of the block (the whole block
/// when it has no more than `2 * edge` rows; `usize::MAX`: always the
/// whole block), and the exchange of the halo rows is posted;
/// [`HaloExchange::complete`] waits for it and writes the rows received
/// (zeros beyond the ends of the axis). Its other rows are unspecified:
/// the copy is kept by the world between calls ([`Extended`]), so that a
/// call of the same function for the same tensor and shape reuses it
/// instead of allocating, zeroing and filling a block-sized array. The
/// same messages as [`extend`] (the same bytes); every rank calls it, the
/// copy and the buffers are allocated fallibly and the ranks agree on
/// their status before any rank posts anything.
#[allow(clippy::too_many_arguments)]
pub fn extend_start<'w, T: Elem + Default + Send + 'static, D: ndarray::Dimension + 'static>(
    world: &'w World,
    function: &str,
    tensor: &str,
    input: ndarray::ArrayView<'_, T, D>,
    axis: usize,
    lo: usize,
    hi: usize,
    edge: usize,
    holds: &[i64],
) -> Result<(Extended<'w, T, D>, HaloExchange), Error> {
    use ndarray::{Axis, Slice};
    let local = if axis < input.ndim() { input.len_of(Axis(axis)) } else { 0 };
    let per_row: usize = if local > 0 { input.len() / local } else { 0 };
    let alone = world.size() == 1 || (lo == 0 && hi == 0);
    let me = world.rank();
    let prepared = (|| -> Result<_, Error> {
        let out = edge_copy(world, function, tensor, &input, axis, (lo, hi), edge)?;
        let mut ex = HaloExchange::none();
        if alone {
            return Ok((out, ex, Vec::new()));
        }
        if holds.len() != world.size() || holds.get(me).map(|&h| h.max(0) as usize) != Some(local) {
            return Err(no_holds(function));
        }
        let (plan, start) = halo_plan(me, holds, lo, hi);
        let bytes = |r: &Range<usize>| {
            r.len().checked_mul(per_row).and_then(|n| n.checked_mul(T::SIZE)).filter(|&b| b <= i32::MAX as usize)
        };
        (ex.slab, ex.lo, ex.local, ex.first) = ((usize::MAX, 0, axis), lo, local, start[me]);
        for round in &plan {
            if let Some(r) = &round.send {
                let mut msg = world.room(function, tensor, bytes(r))?;
                let rows = Slice::from(r.start - start[me]..r.end - start[me]);
                for v in input.slice_axis(Axis(axis), rows).iter() {
                    v.put(&mut msg);
                }
                ex.outgoing.push(msg);
            }
            if let Some(r) = &round.recv {
                let want = bytes(r);
                let mut buf = world.room(function, tensor, want)?;
                buf.resize(want.unwrap_or(0), 0);
                ex.incoming.push((buf, r.clone(), round.up));
            }
        }
        Ok((out, ex, plan))
    })();
    if alone {
        return prepared.map(|(out, ex, _)| (out, ex));
    }
    let (out, mut ex, plan) = world.agreed(function, prepared)?;
    // SAFETY: `ex` owns the buffers and is returned with the requests.
    unsafe { post(world, function, &plan, &mut ex) }?;
    Ok((out, ex))
}

/// The copy of [`extend_start`]: the world's kept copy for `function` and
/// `tensor` when it has the shape wanted (else a fresh one, allocated
/// fallibly and zeroed), with its halo rows zeroed and the first and last
/// `edge` rows of `input`'s block along `axis` copied in.
fn edge_copy<'w, T: Elem + Default + Send + 'static, D: ndarray::Dimension + 'static>(
    world: &'w World,
    function: &str,
    tensor: &str,
    input: &ndarray::ArrayView<'_, T, D>,
    axis: usize,
    (lo, hi): (usize, usize),
    edge: usize,
) -> Result<Extended<'w, T, D>, Error> {
    use ndarray::{Axis, Slice};
    if axis >= input.ndim() {
        return Err(Error::Dist { message: format!("in `{function}`: a halo along a missing axis") });
    }
    let local = input.len_of(Axis(axis));
    let mut shape = input.raw_dim();
    shape[axis] = local + lo + hi;
    let kept = world.take_kept::<ndarray::Array<T, D>>(function, tensor).filter(|a| a.raw_dim() == shape);
    let fresh = kept.is_none();
    let mut out = match kept {
        Some(a) => a,
        None => crate::pool::zeros(function, tensor, shape, T::default())?,
    };
    if !fresh {
        for rows in [0..lo, lo + local..lo + local + hi] {
            out.slice_axis_mut(Axis(axis), Slice::from(rows)).fill(T::default());
        }
    }
    // The rows to copy: all of them when the edges meet.
    let parts = if edge.saturating_mul(2) >= local { [0..local, 0..0] } else { [0..edge, local - edge..local] };
    for rows in parts {
        if rows.is_empty() {
            continue;
        }
        let at = Slice::from(lo + rows.start..lo + rows.end);
        out.slice_axis_mut(Axis(axis), at).assign(&input.slice_axis(Axis(axis), Slice::from(rows)));
    }
    Ok(Extended { world, key: (function.to_string(), tensor.to_string()), copy: Some(out) })
}

/// An extended copy made by [`extend_start`]: an array (by `Deref`) that
/// goes back to its world when dropped, kept there for the next call of
/// the same function for the same tensor (one copy per function and
/// tensor, for as long as the world lives).
pub struct Extended<'w, T: Send + 'static, D: Send + 'static> {
    world: &'w World,
    key: (String, String),
    /// Always `Some` until the drop.
    copy: Option<ndarray::Array<T, D>>,
}

/// A copy kept by a [`World`] between calls ([`Extended`]).
pub(super) struct Kept {
    function: String,
    tensor: String,
    copy: Box<dyn std::any::Any + Send>,
}

impl World {
    /// The copy kept for `function` and `tensor`, if it is an `A`; taken
    /// out (a second call before the first gives it back makes its own).
    fn take_kept<A: 'static>(&self, function: &str, tensor: &str) -> Option<A> {
        let mut kept = self.kept.lock().ok()?;
        let at = kept.iter().position(|k| k.function == function && k.tensor == tensor)?;
        let k = kept.swap_remove(at);
        k.copy.downcast::<A>().ok().map(|b| *b)
    }
}

impl<T: Send + 'static, D: Send + 'static> std::ops::Deref for Extended<'_, T, D> {
    type Target = ndarray::Array<T, D>;
    fn deref(&self) -> &ndarray::Array<T, D> {
        match &self.copy {
            Some(c) => c,
            None => unreachable!("an extended copy is only taken by its drop"),
        }
    }
}

impl<T: Send + 'static, D: Send + 'static> std::ops::DerefMut for Extended<'_, T, D> {
    fn deref_mut(&mut self) -> &mut ndarray::Array<T, D> {
        match &mut self.copy {
            Some(c) => c,
            None => unreachable!("an extended copy is only taken by its drop"),
        }
    }
}

impl<T: Send + 'static, D: Send + 'static> Drop for Extended<'_, T, D> {
    fn drop(&mut self) {
        let Some(copy) = self.copy.take() else { return };
        let Ok(mut kept) = self.world.kept.lock() else { return };
        let (function, tensor) = std::mem::take(&mut self.key);
        kept.retain(|k| !(k.function == function && k.tensor == tensor));
        kept.push(Kept { function, tensor, copy: Box::new(copy) });
    }
}

/// Where the rows of a recurrence's slab lie in a row-major array of
/// `shape` (generated device code, which packs and unpacks them in a
/// kernel): the slab is position `at` of axis `fixed`, its rows run along
/// `axis`. The other axes fall in three groups, the axes before both,
/// between them and after both; a point of a row is `(a, b, c)` over the
/// groups' extents `A`, `B`, `C` (in row-major order), at element
/// `a * sA + b * sB + c + at * sF + row * sR`. Returns `[A, B, C, sA, sB,
/// sF, sR]`; an error when the axes do not fit the shape.
pub fn slab_geometry(function: &str, shape: &[usize], fixed: usize, axis: usize) -> Result<[i64; 7], Error> {
    let n = shape.len();
    if fixed >= n || axis >= n || fixed == axis {
        return Err(Error::Dist { message: format!("in `{function}`: a halo exchange of a tensor of another shape") });
    }
    let (m, big) = (fixed.min(axis), fixed.max(axis));
    let prod = |r: Range<usize>| shape[r].iter().product::<usize>() as i64;
    Ok([
        prod(0..m),
        prod(m + 1..big),
        prod(big + 1..n),
        prod(m..n),
        prod(big..n),
        prod(fixed + 1..n),
        prod(axis + 1..n),
    ])
}

/// The halo exchange of a recurrence's step in device code, through host
/// memory (generated code): `packed` holds this rank's first `first`
/// block rows, then its last block rows (as many as make up `packed`), of
/// `per_row` points each, copied from the device: exactly the rows the
/// neighbours can want (the first `hi` rows go to the ranks before, the
/// last `lo` to the ranks after, fewer in a thinner block). Returns the
/// `lo` rows before this rank's block and the `hi` rows after it, from as
/// many ranks as hold them (zeros beyond the ends of the axis), for the
/// device's halos. The same messages as [`World::halo_rows`] (the same
/// bytes); every rank calls it, and the ranks agree on their status
/// (`prior`: the packing on the device; then the buffers, allocated
/// fallibly) before any rank sends.
#[allow(clippy::too_many_arguments)]
pub fn halo_packed<T: Elem + Default>(
    world: &World,
    function: &str,
    tensor: &str,
    prior: Result<(), Error>,
    packed: &[T],
    first: usize,
    (lo, hi, per_row): (usize, usize, usize),
    holds: &[i64],
) -> Result<(Vec<T>, Vec<T>), Error> {
    let buffers = prior.and_then(|()| {
        let before = world.filled(function, tensor, lo.saturating_mul(per_row), T::default())?;
        let after = world.filled(function, tensor, hi.saturating_mul(per_row), T::default())?;
        Ok((before, after))
    });
    let (mut before, mut after, status) = match buffers {
        Ok((b, a)) => (b, a, Ok(())),
        Err(e) => (Vec::new(), Vec::new(), Err(e)),
    };
    let local = holds.get(world.rank()).map_or(0, |&h| h.max(0) as usize);
    let rows_held = if per_row > 0 { packed.len() / per_row } else { 0 };
    let last = rows_held.saturating_sub(first);
    // The packed row of block row `r`: the first rows, then the last.
    let at = |r: usize| if r < first { Some(r) } else { (r + last).checked_sub(local).map(|k| first + k) };
    let rows = |a: usize, b: usize, bytes: &mut Vec<u8>| {
        for r in a..b {
            let row = at(r).and_then(|k| packed.get(k * per_row..(k + 1) * per_row));
            match row {
                Some(row) => row.iter().for_each(|v| v.put(bytes)),
                // Not among the rows packed (a bug in the caller): zeros,
                // so that the messages keep their lengths.
                None => (0..per_row).for_each(|_| T::default().put(bytes)),
            }
        }
    };
    world.halo_rows(function, tensor, status, holds, lo, hi, per_row, &rows, &mut before, &mut after)?;
    Ok((before, after))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `slab_geometry` against the row-major offsets of the points of one
    /// row of a slab, enumerated in row-major order over the other axes.
    #[test]
    fn slab_geometry_finds_every_point_of_a_row() {
        let shape = [3usize, 4, 2, 5];
        let strides: Vec<usize> = (0..4).map(|d| shape[d + 1..].iter().product()).collect();
        for fixed in 0..4 {
            for axis in (0..4).filter(|&a| a != fixed) {
                let [ea, eb, ec, sa, sb, sf, sr] = slab_geometry("f", &shape, fixed, axis).expect("fits");
                let (at, row) = (shape[fixed] - 1, 1usize);
                let mut want = Vec::new();
                for i in 0..shape.iter().product::<usize>() {
                    let idx: Vec<usize> = (0..4).map(|d| (i / strides[d]) % shape[d]).collect();
                    if idx[fixed] == at && idx[axis] == row {
                        want.push(i as i64);
                    }
                }
                let mut got = Vec::new();
                for a in 0..ea {
                    for b in 0..eb {
                        for c in 0..ec {
                            got.push(a * sa + b * sb + c + at as i64 * sf + row as i64 * sr);
                        }
                    }
                }
                assert_eq!(got, want, "fixed {fixed}, axis {axis}");
            }
        }
        assert!(slab_geometry("f", &shape, 1, 1).is_err());
        assert!(slab_geometry("f", &shape, 4, 1).is_err());
    }

    /// In a world of one nothing is sent and the halos are zeros (beyond
    /// the ends of the axis); a failure before the exchange is returned.
    #[test]
    fn packed_rows_in_a_world_of_one() {
        let world = World::alone();
        let before = world.bytes_sent();
        let packed = [1.0f64, 2.0, 3.0, 4.0];
        let (b, a) = halo_packed(&world, "f", "u", Ok(()), &packed, 1, (2, 1, 2), &[2]).expect("no exchange");
        assert_eq!((b, a), (vec![0.0; 4], vec![0.0; 2]));
        assert_eq!(world.bytes_sent(), before);
        let failed = Err(Error::Dist { message: "packing".into() });
        let r = halo_packed(&world, "f", "u", failed, &packed, 1, (2, 1, 2), &[2]);
        assert!(matches!(r, Err(Error::Dist { .. })), "{r:?}");
    }
}
