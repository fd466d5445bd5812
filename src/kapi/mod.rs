// SPDX-License-Identifier: GPL-2.0

//! Safe abstractions over the C APIs the module uses.
//!
//! This layer is the only code that touches the generated bindings, which are
//! a private submodule here. Everything above it (the device registry, the
//! char device, later connections) is written against these types only.
//!
//! - `kernel::rdma` ([`device`], [`cm`], [`qp`], [`cq`], [`pd`], [`mr`],
//!   [`dma`], [`work`], [`wc`]): RDMA devices and `ib_client`
//!   registrations, RDMA/CM ids, queue pairs and work requests, completion
//!   queues, protection domains, fast-registration regions and DMA-mapped
//!   buffers, from the kernel (one source: `kernel/rust/kernel/rdma/`).
//! - [`misc`]: a misc character device with Rust file operations.
//! - [`sched`]: yielding, `jiffies` and log rate limiting.
//! - [`delayed`]: a delayed work item for an object in an `Arc`.

// The module's own bindings (`bindings/`): the misc device, its helpers,
// and, on a kernel without the RDMA bindings of the rust-rdma series,
// ib_core and rdma_cm with the helpers of `kernel/rust/helpers/rdma.c`.
#[path = "../../bindings/mod.rs"]
mod sys;

// ib_core and rdma_cm: the kernel's own bindings where the kernel carries
// the series (`kernel/patches/rust-rdma`; `rkrust_kernel_rdma`, set by
// Kbuild), this module's otherwise. The same names either way: helpers are
// called without their `rust_helper_` prefix.
#[cfg(rkrust_kernel_rdma)]
use kernel::bindings;
#[cfg(not(rkrust_kernel_rdma))]
use sys as bindings;

/// The owner name ib_core and rdma_cm record for what the module creates
/// (`rdma resource show`), as the C macros pass `KBUILD_MODNAME`.
pub(crate) const OWNER: &kernel::str::CStr = kernel::c_str!("rdma_krust");

pub(crate) mod delayed;
pub(crate) mod errno;
pub(crate) mod misc;
pub(crate) mod sched;

// What the kernel::rdma series has moved into the kernel (one source:
// `kernel/rust/kernel/rdma/`): the kernel's, where it carries the series;
// else the same files built here, whose `pub` items are the kernel crate's
// API, of which the module uses a part (hence `unreachable_pub` and
// `dead_code` allowed).
#[cfg(rkrust_kernel_rdma)]
use kernel::rdma;
#[cfg(not(rkrust_kernel_rdma))]
#[allow(unreachable_pub, dead_code)]
pub(crate) mod rdma;
pub(crate) use rdma::{cm, cq, device, dma, mr, pd, qp, wc, work};
// kernel::rdma's macro, which names its items as `$crate::rdma::...`: the
// kernel's, or the one the files above define at this crate's root (where
// `crate::rdma` is this module's `rdma`).
#[cfg(not(rkrust_kernel_rdma))]
pub(crate) use crate::rdma_client_slot;
#[cfg(rkrust_kernel_rdma)]
pub(crate) use kernel::rdma_client_slot;
