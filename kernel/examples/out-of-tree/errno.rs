// SPDX-License-Identifier: GPL-2.0

//! The error codes `kernel::rdma` returns that 6.12's `kernel::error::code`
//! lacks (the series' first patch adds them), as functions: Kbuild's copy
//! of the files calls `crate::errno::EMSGSIZE()` where they say `EMSGSIZE`.

#![allow(non_snake_case)]

use crate::bindings;
use kernel::error::Error;

macro_rules! errnos {
    ($($name:ident),* $(,)?) => {
        $(
            #[doc = concat!("`-", stringify!($name), "`.")]
            pub(crate) fn $name() -> Error {
                Error::from_errno(-(bindings::$name as i32))
            }
        )*
    };
}

errnos!(
    EMSGSIZE,
    ECONNRESET,
    ENOBUFS,
    ETIMEDOUT,
    ECONNREFUSED,
    EREMOTEIO
);
