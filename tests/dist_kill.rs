//! A rank that dies in the middle of a run: under `mpirun -np 2`, rank 1
//! is killed (`abort`, SIGABRT) before its second call of a sharded
//! function while rank 0 waits in that call's collectives. Open MPI's default error handler then ends
//! the job: `mpirun` exits with an error status instead of hanging, which
//! `.ci/run` checks within a time limit. As a world of one (`cargo test`)
//! there is no rank to kill, and the calls simply succeed.

use einlang::dist::World;
use einlang::einlang;
use einlang::ndarray::Array1;

einlang! {
    #[shard(B)]
    pub fn total(x: [f32; B]) -> f32 {
        sum[n](x[n])
    }
}

fn main() {
    let world = World::init().expect("a world");
    let x = Array1::from_shape_fn(10, |i| i as f32);
    let rows = world.block(10);
    for call in 0..3 {
        if call == 1 && world.rank() == 1 {
            eprintln!("rank 1 is killed (SIGABRT) before call {call}");
            std::process::abort();
        }
        let t = total(&world, x.slice(einlang::ndarray::s![rows.clone()])).expect("a sum");
        assert_eq!(t, 45.0);
    }
    println!("rank {} of {}: no rank was killed", world.rank(), world.size());
}
