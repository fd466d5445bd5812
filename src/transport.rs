// SPDX-License-Identifier: GPL-2.0

//! The transport settings of a connection (`Documentation/transport.rst`):
//! [`Transport`], which `IOCTL_CONNECT` and `IOCTL_LISTEN` take and
//! `IOCTL_CONN_INFO` reports, its `set` bits and the module's defaults. A
//! child of `abi`, so compiled into the module and the tool alike; `core`
//! only.

/// Transport settings of an RC connection (`Documentation/transport.rst`).
///
/// `set` says which fields carry a value ([`TRANSPORT_ACK_TIMEOUT`], ...);
/// the others take the module's defaults ([`DEFAULT_ACK_TIMEOUT`], ...).
/// Which side decides what: the active side's `retry_count` and `rnr_retry`
/// travel in its request, and rdma_cm gives both QPs its `retry_count`,
/// each QP the RNR retries the other side asked for; so on the passive side
/// (`IOCTL_LISTEN`) only `ack_timeout`, `rnr_retry`, `min_rnr_timer` and
/// `recv_depth` may be set. `ack_timeout`, `min_rnr_timer` and `recv_depth`
/// are local to each side.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transport {
    /// `TRANSPORT_*` bits: the fields below that the caller set.
    pub set: u32,
    /// Local ACK timeout: 4.096 us * 2^`ack_timeout`, 1 to 31 (0, no
    /// timer, is refused: a lost packet would never be resent). How long
    /// the transport waits for an acknowledgement before it resends.
    pub ack_timeout: u8,
    /// Resends without progress before the transport fails the operation
    /// (`IB_WC_RETRY_EXC_ERR`), 0 to 7. rxe treats 7 as "forever".
    pub retry_count: u8,
    /// Resends after receiver-not-ready NAKs, 0 to 7; 7 is "forever".
    pub rnr_retry: u8,
    /// The RNR NAK timer this side asks its peer to wait (IBTA table 45
    /// code, 0 to 31; 12 is 0.64 ms).
    pub min_rnr_timer: u8,
    /// Receives this side keeps posted for the message protocol,
    /// [`super::MIN_RECV_DEPTH`] to [`super::RECV_DEPTH`] (the default): 64 KiB
    /// each, so the memory a connection holds. The peer learns it while
    /// connecting; it bounds the largest message this side receives
    /// ([`super::max_msg_size`]). Local to each side.
    pub recv_depth: u32,
}

/// [`Transport::set`]: `ack_timeout` carries a value.
pub const TRANSPORT_ACK_TIMEOUT: u32 = 1;
/// [`Transport::set`]: `retry_count` carries a value (active side only).
pub const TRANSPORT_RETRY_COUNT: u32 = 2;
/// [`Transport::set`]: `rnr_retry` carries a value.
pub const TRANSPORT_RNR_RETRY: u32 = 4;
/// [`Transport::set`]: `min_rnr_timer` carries a value.
pub const TRANSPORT_MIN_RNR_TIMER: u32 = 8;
/// [`Transport::set`]: `recv_depth` carries a value.
pub const TRANSPORT_RECV_DEPTH: u32 = 16;
/// Every [`Transport::set`] bit.
pub const TRANSPORT_ALL: u32 = 31;

/// Default local ACK timeout: 2^14 * 4.096 us = 67 ms (what rdma_cm gives a
/// RoCE QP is 17, 537 ms). See `Documentation/transport.rst` for the measured
/// choice.
pub const DEFAULT_ACK_TIMEOUT: u8 = 14;
/// Default transport retries: 7, what rdma_cm's users and the kernel's ULPs
/// ask for. Under 1 % loss 6 was measured to fail a 2 MiB SEND now and then:
/// rxe counts a retry per ACK timeout without an ACK, and a resend that
/// meets another loss waits a timeout again. On rxe, 7 means "forever", so
/// a dead peer is noticed by a wait's `timeout_ms` or a signal, unless the
/// caller asks for fewer (`Documentation/transport.rst`).
pub const DEFAULT_RETRY_COUNT: u8 = 7;
/// Default RNR retries of a raw connection (`CONN_RAW`): 7, forever. Its
/// receives are the application's business, and rping and perftest, its
/// peers, ask for 7 too: an RNR NAK there means a slow receiver.
pub const DEFAULT_RNR_RETRY: u8 = 7;
/// Default RNR retries of a message connection: 3. Its credits keep a
/// sender from ever sending into an empty receive queue (a credit is a
/// receive already posted), so the protocol never needs an RNR NAK: one
/// means the sender broke the credit rules, and a finite count turns that
/// into an error on its QP (`RNR_RETRY_EXC_ERR`) after a few RNR timers
/// instead of an endless loop. The count is what this side asks of the
/// peer's QP: each QP retries as many times as the other side asked.
pub const DEFAULT_MSG_RNR_RETRY: u8 = 3;
/// Default minimum RNR timer: code 12, 0.64 ms.
pub const DEFAULT_MIN_RNR_TIMER: u8 = 12;
