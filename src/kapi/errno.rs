// SPDX-License-Identifier: GPL-2.0

//! Errno values 6.12's `kernel::error::code` lacks, as functions so they read
//! like the constants there (`errno::ETIMEDOUT()`).

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
    ENOBUFS,
    ECONNABORTED,
    ETIMEDOUT,
    ENOTCONN,
    EISCONN,
    ENETUNREACH,
    EHOSTUNREACH,
    EMSGSIZE,
    EPROTO,
    EOPNOTSUPP,
    EREMOTEIO,
);
