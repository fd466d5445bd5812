// SPDX-License-Identifier: GPL-2.0

//! The errno values the RDMA abstractions return that
//! [`kernel::error::code`] does not define, as functions that read like its
//! constants (`errno::ETIMEDOUT()`).

#![allow(non_snake_case)]

use super::bindings;
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
    ECONNREFUSED,
    ECONNRESET,
    EMSGSIZE,
    ENOBUFS,
    EREMOTEIO,
    ETIMEDOUT
);
