// SPDX-License-Identifier: GPL-2.0

//! Safe abstractions over the C APIs the module uses.
//!
//! This layer is the only code that touches the generated bindings, which are
//! a private submodule here. Everything above it (the device registry, the
//! char device, later connections) is written against these types only.
//!
//! - [`ib`]: RDMA devices and the `ib_client` registration.
//! - [`misc`]: a misc character device with Rust file operations.

#[path = "../../bindings/mod.rs"]
mod bindings;

pub(crate) mod cm;
pub(crate) mod dma;
pub(crate) mod errno;
pub(crate) mod ib;
pub(crate) mod misc;
pub(crate) mod pd;
pub(crate) mod verbs;
pub(crate) mod wc;
pub(crate) mod window;
pub(crate) mod work;
