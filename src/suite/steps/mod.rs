//! Host-program variants (`[[variants.steps]]`): their shape checked at load (`shape`), then
//! expanded over chunks (`expansion`) and each step resolved into a copy, launch, memset,
//! prefetch, event or sync on a named stream (`actions`).

mod actions;
mod expansion;
mod shape;

pub(crate) use expansion::resolve;
pub(crate) use shape::validate;
