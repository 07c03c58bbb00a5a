//! The collectives of `dist`, on every rank of whatever world runs this
//! binary: `cargo test -p einlang-runtime --features mpi --test
//! dist_collectives` is a world of one; `mpirun -np 3` of the built binary
//! runs it on three ranks. Each rank checks its own results against values
//! computed here from every rank's known inputs; a failure exits non-zero.

use einlang_runtime::dist::{agree_extents, block, Combine, World};
use einlang_runtime::Error;

fn main() {
    let world = World::init().expect("init");
    let again = World::init().expect("a second init shares the world");
    assert_eq!((again.rank(), again.size()), (world.rank(), world.size()));
    let (rank, size) = (world.rank(), world.size());

    // Sums in rank order: the same bits on every rank.
    let part = |r: usize| [0.1f32 * (r as f32 + 1.0), 1e8 * (r as f32 - 1.0), -(r as f32)];
    let mut v = part(rank);
    let before = world.bytes_sent();
    world.all_reduce("f", "v", Ok(()), &mut v, Combine::Sum).unwrap();
    let mut want = part(0);
    for r in 1..size {
        for (w, p) in want.iter_mut().zip(part(r)) {
            *w += p;
        }
    }
    assert_eq!(v.map(f32::to_bits), want.map(f32::to_bits), "rank {rank}");
    // One call hands over this rank's 12 bytes, after its status (a word
    // of 8 bytes in the agreement; nothing in a world of one).
    let expect = if size > 1 { 8 + 12 } else { 0 };
    assert_eq!(world.bytes_sent() - before, expect);

    // Integers exact, max/min/prod, booleans.
    let mut i = [rank as i64 * 3 - 1, i64::MAX - rank as i64];
    world.all_reduce("f", "v", Ok(()), &mut i, Combine::Max).unwrap();
    assert_eq!(i, [size as i64 * 3 - 4, i64::MAX]);
    let mut m = [rank as i32 + 2];
    world.all_reduce("f", "v", Ok(()), &mut m, Combine::Prod).unwrap();
    assert_eq!(m[0], (0..size as i32).map(|r| r + 2).product::<i32>());
    let mut b = [rank == size - 1, rank != 0];
    world.all_reduce("f", "v", Ok(()), &mut b, Combine::Or).unwrap();
    assert_eq!(b, [true, size > 1]);
    let mut b = [rank == size - 1];
    world.all_reduce("f", "v", Ok(()), &mut b, Combine::And).unwrap();
    assert_eq!(b, [size == 1]);
    assert_eq!(world.all_reduce_one(f64::NAN, Combine::Max).is_nan(), true);

    // argmax: value 5 on every rank, first at rank 0's index 2 (ties go to
    // the lowest index); ranks with an empty block report -1.
    let mut best = [5.0f32, if rank == size - 1 { 9.0 } else { 1.0 }];
    let mut idx = [10 * rank as i64 + 2, if rank == 0 { -1 } else { 10 * rank as i64 }];
    world.all_reduce_arg("f", "a", Ok(()), &mut best, &mut idx, true).unwrap();
    assert_eq!(idx[0], 2);
    if size == 1 {
        assert_eq!(idx[1], -1);
    } else {
        assert_eq!((best[1], idx[1]), (9.0, 10 * (size as i64 - 1)));
    }

    // argmax with NaN: every rank's block starts with a NaN (its own
    // answer is that position, `index != skip`), then holds `rank + 1` at
    // position `10 * rank + 1`. Only the first rank's NaN is the first
    // term of the whole reduction: it wins. In the second point only the
    // last rank starts with a NaN, and the largest value is on it, so it
    // wins at its `skip` position.
    let mut best = [rank as f64 + 1.0, rank as f64 + 1.0];
    let last = rank == size - 1;
    let mut idx = [10 * rank as i64, 10 * rank as i64 + if last { 0 } else { 1 }];
    let skip = [10 * rank as i64 + 1, 10 * rank as i64 + 1];
    world.all_reduce_arg_skip("f", "a", Ok(()), &mut best, &mut idx, &skip, true).unwrap();
    assert_eq!(idx[0], 0, "a NaN first term wins");
    assert!(best[0] == 1.0, "{}", best[0]);
    if size > 1 {
        assert_eq!((best[1], idx[1]), (size as f64, 10 * (size as i64 - 1) + 1), "a later block's NaN never wins");
    } else {
        assert_eq!(idx[1], 0);
    }

    // Status agreement: the first failing rank's error on every rank.
    assert_eq!(world.agree(Ok(())), Ok(()));
    let mine = if rank == size - 1 {
        Err(Error::Index { function: "f".into(), tensor: "x".into(), axis: 0, index: 7, len: 3 })
    } else {
        Ok(())
    };
    let got = world.agree(mine);
    assert_eq!(got, Err(Error::Index { function: "f".into(), tensor: "x".into(), axis: 0, index: 7, len: 3 }));
    // The world is usable afterwards.
    assert_eq!(world.all_gather_i64(&[rank as i64]), (0..size as i64).collect::<Vec<_>>());

    // Extents: sharded lengths add up, the others must agree.
    let rows = block(10, rank, size);
    let g = agree_extents(&world, "f", Ok(()), &[rows.len() as i64, 4], &["B", "K"], 1).unwrap();
    assert_eq!(g, vec![(10, rows.start as i64)]);
    let bad = agree_extents(&world, "f", Ok(()), &[rows.len() as i64, 4 + (rank == size - 1) as i64], &["B", "K"], 1);
    if size > 1 {
        assert!(matches!(&bad, Err(Error::Dist { message }) if message.contains("`K` differs")), "{bad:?}");
    } else {
        assert!(bad.is_ok());
    }

    // Halo: each rank holds rows (rank 1 none when size is 3) and swaps
    // its first and last row with its neighbours holding rows.
    let holds: Vec<i64> = (0..size).map(|r| if size == 3 && r == 1 { 0 } else { 2 }).collect();
    let me = rank as f64;
    let (mut from_prev, mut from_next) = ([-1.0f64; 2], [-1.0f64; 2]);
    world.halo("f", "u", Ok(()), &holds, (&[me, me], &[me + 0.5, me + 0.5]), (&mut from_prev, &mut from_next)).unwrap();
    let prev = (0..rank).rev().find(|&r| holds[r] > 0);
    let next = (rank + 1..size).find(|&r| holds[r] > 0);
    if holds[rank] > 0 {
        assert_eq!(from_prev, prev.map_or([-1.0; 2], |p| [p as f64 + 0.5; 2]));
        assert_eq!(from_next, next.map_or([-1.0; 2], |n| [n as f64; 2]));
    }
    // A halo copy the allocator has no room for (a block of 2^50 rows,
    // viewed through a stride of zero) on the last rank only: every rank
    // returns that rank's `Error::Alloc` (agreed before anything is sent),
    // none waits for its rows, and the world is usable afterwards.
    let one = [1.5f64];
    let small = einlang_runtime::__ndarray::Array1::from_elem(3, rank as f64);
    let one = einlang_runtime::__ndarray::ArrayView1::from(&one[..]);
    let huge = one.broadcast(1usize << 50).expect("a broadcast view");
    let input = if rank == size - 1 { huge } else { small.view() };
    let holds = world.all_gather_i64(&[input.len() as i64]);
    let got = einlang_runtime::dist::extend(&world, "f", "x", input, 0, 1, 2, &holds);
    assert!(
        matches!(&got, Err(Error::Alloc { function, tensor, bytes }) if function == "f" && tensor == "x" && *bytes == ((1usize << 50) + 3) * 8),
        "{got:?}"
    );
    // The same exchange that fits: the neighbours' rows, zeros past the ends.
    let got = einlang_runtime::dist::extend(&world, "f", "x", small.view(), 0, 1, 2, &vec![3; size]).expect("extend");
    let want: Vec<f64> = [if rank > 0 { rank as f64 - 1.0 } else { 0.0 }]
        .into_iter()
        .chain([rank as f64; 3])
        .chain([if rank + 1 < size { rank as f64 + 1.0 } else { 0.0 }; 2])
        .collect();
    assert_eq!(got.to_vec(), want);

    // Messages whose size comes from the data are allocated fallibly,
    // before the ranks agree: a rank that cannot allocate (here the last,
    // through its buffer limit) makes every rank return its
    // `Error::Alloc`, nobody waits in the collective, nothing is
    // combined, and the world is usable afterwards. A world of one sends
    // nothing and allocates no message.
    let last = rank == size - 1;
    let fails = |bytes: usize| Err(Error::Alloc { function: "g".into(), tensor: "t".into(), bytes });
    let limited = World::init().expect("init");
    if last {
        limited.set_buffer_limit(Some(15));
    }
    let mut v = [rank as f64, 1.0];
    let got = limited.all_reduce("g", "t", Ok(()), &mut v, Combine::Sum);
    // (Rank `last` fails on its own 16 bytes, or on `16 * size` received.)
    assert_eq!(got, if size > 1 { fails(16) } else { Ok(()) }, "rank {rank}");
    assert_eq!(v, [rank as f64, 1.0], "nothing combined");
    // The caller's error on one rank travels the same way.
    let prior = if last { Err(Error::Assert { function: "g".into(), message: "m".into() }) } else { Ok(()) };
    let got = limited.all_reduce("g", "t", prior, &mut [1u8; 2], Combine::Max);
    assert_eq!(got, Err(Error::Assert { function: "g".into(), message: "m".into() }), "rank {rank}");
    // The receiving side: 15 bytes hold one rank's 8 but not every rank's.
    let mut one = [rank as i64];
    let got = limited.all_reduce("g", "t", Ok(()), &mut one, Combine::Sum);
    assert_eq!(got, if size > 1 { fails(8 * size) } else { Ok(()) }, "rank {rank}");
    let (mut best, mut idx) = ([rank as f32; 1], [rank as i64]);
    let got = limited.all_reduce_arg_skip("g", "t", Ok(()), &mut best, &mut idx, &[rank as i64], true);
    assert_eq!(got, if size > 1 { fails(20) } else { Ok(()) }, "rank {rank}");
    let (mut from_prev, mut from_next) = ([0.0f64; 2], [0.0f64; 2]);
    let got = limited.halo("g", "t", Ok(()), &vec![2; size], (&[me; 2], &[me; 2]), (&mut from_prev, &mut from_next));
    assert_eq!(got, if size > 1 { fails(16) } else { Ok(()) }, "rank {rank}");
    let got = einlang_runtime::dist::extend(&limited, "g", "t", small.view(), 0, 2, 2, &vec![3; size]);
    assert_eq!(got.map(|_| ()), if size > 1 { fails(16) } else { Ok(()) }, "rank {rank}");
    // Usable afterwards, and the same calls pass without the limit.
    limited.set_buffer_limit(None);
    let mut v = [rank as f64, 1.0];
    limited.all_reduce("g", "t", Ok(()), &mut v, Combine::Sum).expect("after the failures");
    assert_eq!(v, [(0..size).map(|r| r as f64).sum::<f64>(), size as f64]);
    let (mut from_prev, mut from_next) = ([-1.0f64; 2], [-1.0f64; 2]);
    limited
        .halo("g", "t", Ok(()), &vec![2; size], (&[me; 2], &[me; 2]), (&mut from_prev, &mut from_next))
        .expect("halo after the failures");
    if rank > 0 {
        assert_eq!(from_prev, [me - 1.0; 2]);
    }
    if rank + 1 < size {
        assert_eq!(from_next, [me + 1.0; 2]);
    }
    overlapped_halo(&world);
    println!("rank {rank} of {size}: dist collectives ok, {} bytes sent", world.bytes_sent());
}

/// The exchange of a recurrence's step, started and waited for (what a
/// sharded stencil's steps call): rows of one value, two halo rows below
/// the block and one above, every rank holding three rows but the second
/// of three ranks (none). A rank that drops the exchange without waiting
/// (an error between the two) completes its messages: the others get
/// their rows and nobody hangs.
fn overlapped_halo(world: &World) {
    use einlang_runtime::__ndarray::Array2;
    use einlang_runtime::dist::halo_start;
    use einlang_runtime::rec::Store;
    let (rank, size) = (world.rank(), world.size());
    let holds: Vec<i64> = (0..size).map(|r| if size == 3 && r == 1 { 0 } else { 3 }).collect();
    let start: Vec<usize> = (0..=size).map(|r| holds[..r].iter().sum::<i64>() as usize).collect();
    let (lo, hi, local) = (2usize, 1usize, holds[rank] as usize);
    // Two slots of the time axis; slot 1 holds the step exchanged: global
    // row g as the value g, the halos -1 until they are written.
    let mut u = Array2::from_elem((2, lo + local + hi), -1.0f64);
    for p in 0..local {
        u[[1, lo + p]] = (start[rank] + p) as f64;
    }
    let store = Store::<f64, 2>::new(&mut u);
    let before = world.bytes_sent();
    let ex = unsafe { halo_start(world, "h", "u", &store, 0, 1, 1, lo, hi, &holds) }.expect("start");
    let dropper = size > 1 && rank == size - 1;
    if dropper {
        drop(ex);
    } else {
        unsafe { ex.wait("h", &store) }.expect("wait");
    }
    // Every rank gets past the exchange: an agreement now pairs on all.
    world.agree(Ok(())).expect("nobody hangs");
    let sent = world.bytes_sent() - before;
    // The rows every other rank with rows wants from this one (the two
    // global rows before its block, the one after it), 8 bytes each, and
    // the status word of the start.
    let total = start[size];
    let mine = start[rank]..start[rank + 1];
    let wanted: usize = (0..size)
        .filter(|&q| q != rank && holds[q] > 0)
        .map(|q| {
            let rows = start[q].saturating_sub(lo)..start[q];
            rows.chain(start[q + 1]..(start[q + 1] + hi).min(total)).filter(|g| mine.contains(g)).count()
        })
        .sum();
    let status = if size > 1 { 8 + 8 } else { 0 };
    assert_eq!(sent, (status + wanted * 8) as u64, "rank {rank}");
    if !dropper && local > 0 {
        let row = |g: isize| if g >= 0 && (g as usize) < total { g as f64 } else { -1.0 };
        let want: Vec<f64> = (-(lo as isize)..(local + hi) as isize).map(|p| row(start[rank] as isize + p)).collect();
        assert_eq!(u.row(1).to_vec(), want, "rank {rank}");
        assert!(u.row(0).iter().all(|&v| v == -1.0), "the other slot is left alone");
    }
    // A rank whose buffers do not fit: every rank returns its error before
    // anything is posted, and the world is usable afterwards.
    let limited = World::init().expect("init");
    if size > 1 && rank == 0 {
        limited.set_buffer_limit(Some(7));
    }
    let mut v = Array2::from_elem((2, lo + local + hi), 0.0f64);
    let store = Store::<f64, 2>::new(&mut v);
    let got = unsafe { halo_start(&limited, "h", "v", &store, 0, 1, 1, lo, hi, &holds) };
    if size > 1 {
        assert!(
            matches!(&got, Err(Error::Alloc { function, tensor, bytes: 16 }) if function == "h" && tensor == "v"),
            "rank {rank}: {:?}",
            got.map(|_| ())
        );
    } else {
        assert!(got.is_ok());
    }
    limited.set_buffer_limit(None);
    let ex = unsafe { halo_start(&limited, "h", "v", &store, 0, 1, 1, lo, hi, &holds) }.expect("after the failure");
    unsafe { ex.wait("h", &store) }.expect("wait");
}
