//! The one MPI session of the process, shared by every `World`.

use crate::Error;
use mpi::traits::*;
use std::sync::Mutex;

/// Whether this process should start MPI: it was launched by an MPI
/// launcher (or `EINLANG_MPI` says so).
pub fn wanted() -> bool {
    match std::env::var("EINLANG_MPI").as_deref() {
        Ok("0") => return false,
        Ok("1") => return true,
        _ => {}
    }
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_SIZE"]
        .iter()
        .any(|k| std::env::var_os(k).is_some())
}

struct Session(Option<mpi::environment::Universe>);
// SAFETY: the universe is only dropped (finalized) at exit, and MPI was
// initialized for calls from any thread (`Threading::Multiple` when the
// library gives it; generated code calls from one thread at a time).
unsafe impl Send for Session {}

static SESSION: Mutex<Option<Session>> = Mutex::new(None);
static FINALIZED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" {
    fn atexit(cb: extern "C" fn()) -> std::os::raw::c_int;
}

extern "C" fn finalize_at_exit() {
    if let Ok(mut s) = SESSION.lock() {
        if let Some(Session(u)) = s.as_mut() {
            // Dropping the universe calls MPI_Finalize.
            drop(u.take());
            FINALIZED.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

/// Test binaries run their tests on several threads at once, which
/// under MPI would interleave different tests' collectives differently
/// on different ranks. Before `main`, a process started by an MPI
/// launcher therefore asks the test harness for one test at a time
/// (in name order, the same on every rank), unless `RUST_TEST_THREADS`
/// says otherwise. Other programs do not read the variable.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static ONE_TEST_AT_A_TIME: extern "C" fn() = {
    extern "C" fn one_test_at_a_time() {
        if wanted() && std::env::var_os("RUST_TEST_THREADS").is_none() {
            // Before `main`: no other thread reads the environment.
            std::env::set_var("RUST_TEST_THREADS", "1");
        }
    }
    one_test_at_a_time
};

/// A `World`'s access to the session.
pub struct Handle;

impl Handle {
    pub fn get() -> Result<Handle, Error> {
        let mut s = SESSION.lock().map_err(|_| Error::Dist { message: "MPI session lock poisoned".into() })?;
        if FINALIZED.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Error::Dist { message: "MPI was already finalized".into() });
        }
        if s.is_none() {
            if mpi::environment::is_initialized() {
                return Err(Error::Dist { message: "MPI was initialized outside einlang".into() });
            }
            let Some((universe, _threading)) = mpi::initialize_with_threading(mpi::Threading::Multiple) else {
                return Err(Error::Dist { message: "MPI could not be initialized".into() });
            };
            // SAFETY: registering a plain function to run at exit.
            unsafe {
                atexit(finalize_at_exit);
            }
            // A panic on one rank (a failed check) ends the whole job:
            // otherwise the rank would finalize at exit while the
            // others wait for it in a collective.
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                previous(info);
                if !FINALIZED.load(std::sync::atomic::Ordering::SeqCst) {
                    mpi::topology::SimpleCommunicator::world().abort(101);
                }
            }));
            *s = Some(Session(Some(universe)));
        }
        Ok(Handle)
    }

    fn comm(&self) -> mpi::topology::SimpleCommunicator {
        mpi::topology::SimpleCommunicator::world()
    }

    pub fn rank_size(&self) -> (usize, usize) {
        let c = self.comm();
        (c.rank() as usize, c.size() as usize)
    }

    /// Every rank's `mine` into `out` (`mine.len()` bytes per rank).
    pub fn all_gather_into(&self, mine: &[u8], out: &mut [u8]) {
        self.comm().all_gather_into(mine, out);
    }

    pub fn all_gather_var(&self, mine: &[u8], lens: &[usize]) -> Vec<Vec<u8>> {
        let c = self.comm();
        let total: usize = lens.iter().sum();
        let mut out = vec![0u8; total];
        let counts: Vec<i32> = lens.iter().map(|&l| l as i32).collect();
        let displs: Vec<i32> = counts
            .iter()
            .scan(0, |acc, &x| {
                let d = *acc;
                *acc += x;
                Some(d)
            })
            .collect();
        {
            let mut part = mpi::datatype::PartitionMut::new(&mut out[..], &counts[..], &displs[..]);
            c.all_gather_varcount_into(mine, &mut part);
        }
        let mut res = Vec::with_capacity(lens.len());
        let mut at = 0;
        for &l in lens {
            res.push(out[at..at + l].to_vec());
            at += l;
        }
        res
    }

    pub fn broadcast(&self, root: usize, bytes: &mut [u8]) {
        self.comm().process_at_rank(root as i32).broadcast_into(bytes);
    }

    /// Sends `send` to `dest` and receives `recv.len()` bytes from
    /// `src` into `recv` (either may be absent); whether it received.
    pub fn send_recv(&self, dest: Option<usize>, send: &[u8], src: Option<usize>, recv: &mut [u8]) -> bool {
        let c = self.comm();
        const TAG: i32 = 7301;
        match (dest, src) {
            (Some(d), Some(s)) => {
                mpi::point_to_point::send_receive_into_with_tags(
                    send,
                    &c.process_at_rank(d as i32),
                    TAG,
                    recv,
                    &c.process_at_rank(s as i32),
                    TAG,
                );
                true
            }
            (Some(d), None) => {
                c.process_at_rank(d as i32).send_with_tag(send, TAG);
                false
            }
            (None, Some(s)) => {
                c.process_at_rank(s as i32).receive_into_with_tag(recv, TAG);
                true
            }
            (None, None) => false,
        }
    }
}

/// Messages in flight (`MPI_Isend`/`MPI_Irecv` on `MPI_COMM_WORLD`, one
/// tag): the exchange of [`crate::dist::HaloExchange`]. Dropping it waits
/// for every message, so that no request outlives its buffer and no
/// partner is left waiting (the partners posted theirs together with
/// these, after the ranks agreed on their status).
pub struct Requests(Vec<mpi::ffi::MPI_Request>);

// SAFETY: the requests are handles of MPI (initialized for calls from any
// thread); they are completed by whichever thread holds them.
unsafe impl Send for Requests {}

/// The tag of nonblocking halo messages (the blocking ones use another:
/// the two never pair).
const ASYNC_TAG: i32 = 7302;

fn checked(function: &str, what: &str, code: std::os::raw::c_int) -> Result<(), Error> {
    if code == mpi::ffi::MPI_SUCCESS as std::os::raw::c_int {
        Ok(())
    } else {
        Err(Error::Dist { message: format!("in `{function}`: {what} failed (MPI error {code})") })
    }
}

impl Requests {
    pub fn new() -> Requests {
        Requests(Vec::new())
    }

    /// Posts the send of `buf` to rank `dest`.
    ///
    /// # Safety
    /// `buf` stays allocated and unchanged until the requests complete
    /// ([`Requests::wait`] or the drop).
    pub unsafe fn send(&mut self, function: &str, dest: usize, buf: &[u8]) -> Result<(), Error> {
        let count = i32::try_from(buf.len()).map_err(|_| too_long(function))?;
        let mut req = mpi::ffi::RSMPI_REQUEST_NULL;
        let code = mpi::ffi::MPI_Isend(
            buf.as_ptr().cast(),
            count,
            mpi::ffi::RSMPI_UINT8_T,
            dest as i32,
            ASYNC_TAG,
            mpi::ffi::RSMPI_COMM_WORLD,
            &mut req,
        );
        checked(function, "MPI_Isend", code)?;
        self.0.push(req);
        Ok(())
    }

    /// Posts the receive of `buf.len()` bytes from rank `src` into `buf`.
    ///
    /// # Safety
    /// `buf` stays allocated, and is neither read nor written, until the
    /// requests complete.
    pub unsafe fn receive(&mut self, function: &str, src: usize, buf: &mut [u8]) -> Result<(), Error> {
        let count = i32::try_from(buf.len()).map_err(|_| too_long(function))?;
        let mut req = mpi::ffi::RSMPI_REQUEST_NULL;
        let code = mpi::ffi::MPI_Irecv(
            buf.as_mut_ptr().cast(),
            count,
            mpi::ffi::RSMPI_UINT8_T,
            src as i32,
            ASYNC_TAG,
            mpi::ffi::RSMPI_COMM_WORLD,
            &mut req,
        );
        checked(function, "MPI_Irecv", code)?;
        self.0.push(req);
        Ok(())
    }

    /// Waits until every message posted has gone or arrived.
    pub fn wait(&mut self, function: &str) -> Result<(), Error> {
        if self.0.is_empty() {
            return Ok(());
        }
        // SAFETY: the requests were posted by `send`/`receive`, whose
        // buffers their callers keep until now.
        let code =
            unsafe { mpi::ffi::MPI_Waitall(self.0.len() as i32, self.0.as_mut_ptr(), mpi::ffi::RSMPI_STATUSES_IGNORE) };
        self.0.clear();
        checked(function, "MPI_Waitall", code)
    }
}

fn too_long(function: &str) -> Error {
    Error::Dist { message: format!("in `{function}`: a halo message of more than 2^31 - 1 bytes") }
}

impl Drop for Requests {
    fn drop(&mut self) {
        // An early return between the start of an exchange and its wait:
        // every partner posted its side, so this completes.
        let _ = self.wait("a halo exchange");
    }
}
