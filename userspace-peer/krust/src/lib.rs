// SPDX-License-Identifier: GPL-2.0

//! `krust`: what the two userspace binaries of rdma-krust share, the
//! user's tool `rdma-krust` and the test kit `rdma-krust-kit`.
//!
//! - [`abi`]: the module's ioctl ABI, the `rdma-krust-abi` crate
//!   (`abi/` at the top), generated from the C header; the module compiles
//!   the same files;
//! - [`kdev`]: `/dev/rdma_krust` and its ioctls; [`opts`]: the global
//!   options that open it;
//! - [`upeer`] and [`verbs`]: the userspace RDMA peer, librdmacm and
//!   libibverbs through rdma-sys;
//! - [`scenario`] and [`ctl`]: the scenarios both ends run and their
//!   control messages, on a module connection or the userspace peer's;
//! - [`cmds`] and [`rawping`]: the user's commands that the test kit runs
//!   too, with its test options;
//! - helpers: addresses ([`addr`]), exit statuses and hints ([`exit`]),
//!   the machine's memory and file limit ([`host`]),
//!   errno names ([`errno`]), data patterns ([`pattern`]), device tables
//!   ([`table`]), benchmark figures and reports ([`bench`](mod@bench));
//! - [`cmdscan`]: the binaries' command lines in the scripts and documents,
//!   for the binaries' tests.

pub use abi;
pub mod addr;
pub mod bench;
pub mod cmds;
pub mod cmdscan;
pub mod ctl;
pub mod errno;
pub mod exit;
pub mod host;
pub mod kdev;
pub mod opts;
pub mod pattern;
pub mod rawping;
pub mod scenario;
pub mod table;
pub mod upeer;
pub mod verbs;
