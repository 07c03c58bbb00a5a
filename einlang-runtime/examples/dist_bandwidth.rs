//! Measures what the ranks' links carry, for the weak-scaling estimate in
//! docs/performance.md: the time of an all-reduce (`World::all_reduce`,
//! a gather of every rank's part and a rank-ordered sum) and of a halo
//! exchange (`World::halo`) of a given size, each with its status
//! agreement (one word per rank) and its fallibly allocated buffers.
//!
//! ```sh
//! cargo build --release -p einlang-runtime --features mpi --example dist_bandwidth
//! mpirun -np 2 target/release/examples/dist_bandwidth
//! ```

use std::time::Instant;

use einlang_runtime::dist::{Combine, World};

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
}
