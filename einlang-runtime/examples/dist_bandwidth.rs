//! Measures what the ranks' links carry, for the weak-scaling estimate in
//! docs/performance.md: the time of an all-reduce (`World::all_reduce`,
//! a gather of every rank's part and a rank-ordered sum) and of a halo
//! exchange (`World::halo`) of a given size, each with its status
//! agreement (one word per rank) and its fallibly allocated buffers; then
//! what a recurrence step's halo exchange (one row of 512 f64 each way,
//! as in `heat_dist`) costs on top of a computation of a given length,
//! waited for at once (the blocking exchange) or after the computation
//! (`dist::halo_start`, then `HaloExchange::wait`: the overlap).
//!
//! ```sh
//! cargo build --release -p einlang-runtime --features mpi --example dist_bandwidth
//! mpirun -np 2 target/release/examples/dist_bandwidth
//! ```

use std::time::Instant;

use einlang_runtime::dist::{halo_start, Combine, World};
use std::time::Duration;

fn main() {
    let world = World::init().expect("a world");
    let (rank, size) = (world.rank(), world.size());
    for &n in &[1usize << 10, 1 << 14, 1 << 18, 1 << 20] {
        let mut v = vec![rank as f32; n];
        let reps = 20;
        world.all_reduce("dist_bandwidth", "v", Ok(()), &mut v, Combine::Sum).expect("an all-reduce");
        let start = Instant::now();
        for _ in 0..reps {
            world.all_reduce("dist_bandwidth", "v", Ok(()), &mut v, Combine::Sum).expect("an all-reduce");
        }
        let t = start.elapsed().as_secs_f64() / reps as f64;
        let holds = vec![1i64; size];
        let send = vec![1.0f64; n / 2];
        let (mut a, mut b) = (vec![0.0f64; n / 2], vec![0.0f64; n / 2]);
        let start = Instant::now();
        for _ in 0..reps {
            world
                .halo("dist_bandwidth", "u", Ok(()), &holds, (&send, &send), (&mut a, &mut b))
                .expect("a halo exchange");
        }
        let h = start.elapsed().as_secs_f64() / reps as f64;
        if rank == 0 {
            let bytes = (n * 4) as f64;
            println!(
                "{size} ranks, {:>8} bytes per rank: all-reduce {:>9.1} us ({:.2} GB/s handed over), halo exchange both ways {:>9.1} us ({:.2} GB/s per direction)",
                n * 4,
                t * 1e6,
                bytes / t / 1e9,
                h * 1e6,
                bytes / h / 1e9
            );
        }
    }
    overlap(&world);
}

/// A step of `work` microseconds (a busy loop, standing for the interior
/// rows) with a halo exchange of one row of 512 f64 each way, started
/// before it and waited for after it, or completed before it; what each
/// costs beyond `work`.
fn overlap(world: &World) {
    use einlang_runtime::__ndarray::Array3;
    let size = world.size();
    let rows = 8usize;
    let holds = vec![rows as i64; size];
    let mut u = Array3::from_elem((2, rows + 2, 512), 1.0f64);
    let store = einlang_runtime::rec::Store::<f64, 3>::new(&mut u);
    let busy = |us: u64| {
        let t = Instant::now();
        let mut x = 1.0f64;
        while t.elapsed() < Duration::from_micros(us) {
            x = std::hint::black_box(x * 1.000_001);
        }
        x
    };
    let reps = 400;
    for work in [0u64, 20, 50, 100, 200] {
        let mut cost = [0.0f64; 2];
        // Alternating, so that both see the same load.
        for round in 0..4 {
            for (k, overlapped) in [(0usize, false), (1, true)] {
                let start = Instant::now();
                for _ in 0..reps / 4 {
                    let ex = unsafe { halo_start(world, "dist_bandwidth", "u", &store, 0, 1, 1, 1, 1, &holds) }
                        .expect("an exchange");
                    if overlapped {
                        busy(work);
                        unsafe { ex.wait("dist_bandwidth", &store) }.expect("its wait");
                    } else {
                        unsafe { ex.wait("dist_bandwidth", &store) }.expect("its wait");
                        busy(work);
                    }
                }
                cost[k] += start.elapsed().as_secs_f64();
                let _ = round;
            }
        }
        if world.rank() == 0 {
            let per = |c: f64| c / reps as f64 * 1e6 - work as f64;
            println!(
                "{size} ranks, a step of {work:>3} us with a 4096-byte row each way: exchange waited at once +{:.1} us, overlapped +{:.1} us",
                per(cost[0]),
                per(cost[1])
            );
        }
    }
}
