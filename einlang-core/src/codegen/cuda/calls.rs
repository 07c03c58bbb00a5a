//! What the CUDA back end reads from the program's call graph
//! (`ir::calls`): which host functions get a CUDA twin, and which exist
//! only as one because they reach device code.

use std::collections::BTreeMap;

use crate::base::span::Span;
use crate::ir::{FuncId, Program};

/// The functions that are not `#[device(cuda)]` themselves but are called
/// with tensors from device code (directly or through each other), with the
/// span of a device function that reaches them: each gets a CUDA twin.
/// Read from the program's call graph.
pub fn device_twins(p: &Program) -> BTreeMap<FuncId, Span> {
    let mut twins = BTreeMap::new();
    let mut work: Vec<(FuncId, Span)> = p.functions().filter_map(|(id, f)| f.device.map(|d| (id, d.span))).collect();
    while let Some((f, span)) = work.pop() {
        for c in p.calls().callees(f).iter().filter(|c| c.tensors) {
            if p.func(c.func).device.is_none() && !twins.contains_key(&c.func) {
                twins.insert(c.func, span);
                work.push((c.func, span));
            }
        }
    }
    twins
}

/// The host functions that call a `#[device(cuda)]` function, directly or
/// through other host functions: they cannot run on the host (a device
/// function needs a `Device`), so they exist only as CUDA twins. For each,
/// a device function it reaches and its span. Read from the program's
/// call graph.
pub fn device_bound(p: &Program) -> BTreeMap<FuncId, (FuncId, Span)> {
    let mut bound: BTreeMap<FuncId, (FuncId, Span)> = BTreeMap::new();
    loop {
        let mut changed = false;
        for (id, f) in p.functions() {
            if f.device.is_some() || bound.contains_key(&id) {
                continue;
            }
            let reached = p.calls().callees(id).iter().find_map(|c| match p.func(c.func).device {
                Some(d) => Some((c.func, d.span)),
                None => bound.get(&c.func).copied(),
            });
            if let Some(r) = reached {
                bound.insert(id, r);
                changed = true;
            }
        }
        if !changed {
            return bound;
        }
    }
}
