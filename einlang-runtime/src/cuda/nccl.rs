//! The communication of `#[shard]` functions on `#[device(cuda)]` (feature
//! `nccl`): device tensors combined over the ranks of a
//! [`World`](crate::dist::World) in place on their devices, through NCCL
//! (cudarc's `nccl` module, loading `libnccl.so` at run time).
//!
//! Each rank drives one device. The first all-reduce of a world on a
//! device makes the NCCL communicator, collectively: every rank checks
//! that libnccl loads (cudarc panics at its first call otherwise) and the
//! ranks agree on it, rank 0 makes the NCCL id, which reaches the others
//! over MPI ([`World::broadcast`]), and every rank joins. The communicator
//! is kept for the process's life, one per device, rank and world size.
//! Element types and operations NCCL lacks (`i16`; `bool`'s `all`/`any`)
//! go through the host and MPI instead.
//!
//! Built with `cuda` but without `nccl`, a world of one needs nothing and
//! a larger world's all-reduce is an error on every rank that names the
//! feature.

#[cfg(feature = "nccl")]
use std::sync::Mutex;

use ndarray::Dimension;

#[cfg(feature = "nccl")]
use super::guarded;
use super::{Device, Elem, Tensor};
use crate::dist::{Combine, World};
use crate::Error;

/// Whether `libnccl.so` can be loaded here (false without the feature
/// `nccl`).
pub fn available() -> bool {
    // SAFETY: only tries to open the library with libloading.
    #[cfg(feature = "nccl")]
    return unsafe { cudarc::nccl::sys::is_culib_present() };
    #[cfg(not(feature = "nccl"))]
    false
}

/// `Ok` when libnccl can be loaded, otherwise the error every rank returns
/// (`rank` is this rank).
pub fn loaded(rank: usize) -> Result<(), Error> {
    if available() {
        return Ok(());
    }
    let why = if cfg!(feature = "nccl") {
        "libnccl.so could not be loaded"
    } else {
        "einlang was built without the feature `nccl`"
    };
    Err(Error::Device { operation: "loading NCCL".into(), message: format!("{why} (rank {rank})") })
}

#[cfg(feature = "nccl")]
fn nccl_error(operation: &str, e: impl std::fmt::Debug) -> Error {
    Error::Device { operation: operation.to_string(), message: format!("NCCL: {e:?}") }
}

#[cfg(feature = "nccl")]
/// A communicator used under the lock of [`COMMS`].
struct Shared(cudarc::nccl::Comm);

#[cfg(feature = "nccl")]
// SAFETY: NCCL communicators may be used from any thread, one call at a
// time; every use of one holds the lock of `COMMS`.
unsafe impl Send for Shared {}

#[cfg(feature = "nccl")]
/// Which communicator: (device ordinal, rank, world size).
#[cfg(feature = "nccl")]
type Key = (usize, usize, usize);

#[cfg(feature = "nccl")]
/// The communicators made so far.
static COMMS: Mutex<Vec<(Key, Shared)>> = Mutex::new(Vec::new());

#[cfg(feature = "nccl")]
/// Runs `f` with the communicator of `world`'s ranks on their devices
/// (this rank's `dev`), made first if this is the first use: a collective
/// call, which every rank makes at the same point (all ranks call the same
/// sharded functions in the same order). An error on one rank is the same
/// error on every rank.
fn with_comm<R>(
    world: &World,
    dev: &Device,
    f: impl FnOnce(&cudarc::nccl::Comm) -> Result<R, Error>,
) -> Result<R, Error> {
    let key = (dev.ordinal(), world.rank(), world.size());
    let mut comms = COMMS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, c)) = comms.iter().find(|(k, _)| *k == key) {
        return f(&c.0);
    }
    world.agree(loaded(world.rank()))?;
    let mut id = [0u8; 128];
    let made = if world.rank() == 0 {
        guarded("making an NCCL id", || cudarc::nccl::Id::new().map_err(|e| nccl_error("making an NCCL id", e))).map(
            |made| {
                for (o, c) in id.iter_mut().zip(made.internal()) {
                    *o = *c as u8;
                }
            },
        )
    } else {
        Ok(())
    };
    world.agree(made)?;
    world.broadcast(0, &mut id);
    let mut internal = [0 as std::ffi::c_char; 128];
    for (o, c) in internal.iter_mut().zip(id) {
        *o = c as std::ffi::c_char;
    }
    let stream = dev.inner.stream.clone();
    let (rank, size) = (world.rank(), world.size());
    let joined = guarded("joining the NCCL communicator", || {
        cudarc::nccl::Comm::from_rank(stream, rank, size, cudarc::nccl::Id::uninit(internal))
            .map_err(|e| nccl_error("joining the NCCL communicator", e))
    });
    let status = match &joined {
        Ok(_) => Ok(()),
        Err(e) => Err(e.clone()),
    };
    if let Err(e) = world.agree(status) {
        // Another rank failed: this one's communicator is left alone
        // (aborting it could panic inside cudarc).
        if let Ok(c) = joined {
            std::mem::forget(c);
        }
        return Err(e);
    }
    let comm = joined?;
    comms.push((key, Shared(comm)));
    match comms.last() {
        Some((_, c)) => f(&c.0),
        None => Err(nccl_error("keeping the communicator", "lost")),
    }
}

/// Where an all-reduce is (the function and the tensor, for errors).
pub type Site<'a> = (&'a str, &'a str);

/// Element types a sharded device function reduces over the ranks.
pub trait Reduce: Elem + crate::dist::Elem {
    /// [`all_reduce`] for this element type.
    #[cfg(feature = "nccl")]
    fn all_reduce<D: Dimension>(world: &World, site: Site, t: &mut Tensor<Self, D>, op: Combine) -> Result<(), Error>;
}

#[cfg(not(feature = "nccl"))]
impl<T: Elem + crate::dist::Elem> Reduce for T {}

#[cfg(feature = "nccl")]
macro_rules! through_nccl {
    ($($t:ty),*) => {$(
        impl Reduce for $t {
            fn all_reduce<D: Dimension>(world: &World, site: Site, t: &mut Tensor<$t, D>, op: Combine) -> Result<(), Error> {
                use cudarc::nccl::ReduceOp;
                let op = match op {
                    Combine::Sum => ReduceOp::Sum,
                    Combine::Prod => ReduceOp::Prod,
                    Combine::Max => ReduceOp::Max,
                    Combine::Min => ReduceOp::Min,
                    other => return through_host(world, site, t, other),
                };
                let dev = t.dev.clone();
                world.count(t.len() * std::mem::size_of::<$t>());
                with_comm(world, &dev, |comm| {
                    guarded("an NCCL all-reduce", || {
                        comm.all_reduce_in_place(&mut t.data, &op)
                            .map(|_| ())
                            .map_err(|e| nccl_error("an NCCL all-reduce", e))
                    })
                })
            }
        }
    )*};
}
#[cfg(feature = "nccl")]
through_nccl!(i8, i32, i64, u8, u32, u64, f32, f64);

#[cfg(feature = "nccl")]
macro_rules! through_mpi {
    ($($t:ty),*) => {$(
        impl Reduce for $t {
            fn all_reduce<D: Dimension>(world: &World, site: Site, t: &mut Tensor<$t, D>, op: Combine) -> Result<(), Error> {
                through_host(world, site, t, op)
            }
        }
    )*};
}
#[cfg(feature = "nccl")]
through_mpi!(i16, bool);

#[cfg(feature = "nccl")]
/// The all-reduce through host memory and MPI, written back in place. A
/// copy to the host that fails is this rank's status in the agreement of
/// [`World::all_reduce`] (which allocates its message fallibly).
fn through_host<T: Elem + crate::dist::Elem, D: Dimension>(
    world: &World,
    (function, tensor): Site,
    t: &mut Tensor<T, D>,
    op: Combine,
) -> Result<(), Error> {
    let mut host = t.to_host();
    let (values, status): (&mut [T], _) = match &mut host {
        Ok(h) => match h.as_slice_mut() {
            Some(v) => (v, Ok(())),
            None => (&mut [], Err(nccl_error("an all-reduce through the host", "a tensor not in standard layout"))),
        },
        Err(e) => (&mut [], Err(e.clone())),
    };
    world.all_reduce(function, tensor, status, values, op)?;
    if values.is_empty() {
        return Ok(());
    }
    let stream = t.dev.inner.stream.clone();
    guarded("copying to the device", || {
        stream.memcpy_htod(&*values, &mut t.data).map_err(super::driver("copying to the device"))
    })
}

/// `t` (this rank's value of a tensor of the same shape on every rank)
/// combined over the ranks of `world` element by element with `op`, in
/// place on the device (generated code: a sharded device function's
/// all-reduce, after the ranks agreed on their status; `site` names the
/// function and the tensor in an error). Every rank gets the same bits
/// (NCCL's order of terms, which is not rank order). A world of one leaves
/// `t` as it is and needs no NCCL.
pub fn all_reduce<T: Reduce, D: Dimension>(
    world: &World,
    site: Site,
    t: &mut Tensor<T, D>,
    op: Combine,
) -> Result<(), Error> {
    if world.size() == 1 || t.is_empty() {
        return Ok(());
    }
    #[cfg(feature = "nccl")]
    return T::all_reduce(world, site, t, op);
    #[cfg(not(feature = "nccl"))]
    {
        let _ = (op, site);
        world.agree(loaded(world.rank()))
    }
}

/// Makes the NCCL communicator of `world` on `dev` now (collectively),
/// rather than at the first all-reduce: `Err` on every rank when a rank
/// cannot load libnccl or join, never a panic.
pub fn connect(world: &World, dev: &Device) -> Result<(), Error> {
    #[cfg(feature = "nccl")]
    return with_comm(world, dev, |_| Ok(()));
    #[cfg(not(feature = "nccl"))]
    {
        let _ = dev;
        if world.size() == 1 {
            return Ok(());
        }
        world.agree(loaded(world.rank()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether libnccl loads is answered without touching cudarc's
    /// loader (which panics when the library is missing), and its absence
    /// is an error that says what is missing.
    #[test]
    fn a_missing_library_is_an_error() {
        let r = std::panic::catch_unwind(|| loaded(0)).expect("no panic");
        assert_eq!(r.is_ok(), available());
        if let Err(Error::Device { operation, message }) = r {
            assert_eq!(operation, "loading NCCL");
            assert!(message.contains("libnccl") || message.contains("`nccl`"), "{message}");
        }
    }

    /// A world of one needs no NCCL: connecting succeeds without the
    /// library (no device is touched).
    #[test]
    fn a_world_of_one_needs_no_nccl() {
        if let Ok(dev) = Device::new(0) {
            assert!(connect(&World::alone(), &dev).is_ok() || available());
        }
    }
}
