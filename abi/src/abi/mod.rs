// SPDX-License-Identifier: GPL-2.0

//! The `/dev/rdma_krust` ioctl ABI, under Rust names.
//!
//! The one definition is the C header, `include/uapi/linux/rdma_krust.h`.
//! bindgen turns it into `crate::uapi`, through `abi/uapi_helper.h`: the
//! module's Kbuild and the `rdma-krust-abi` crate's `build.rs` each
//! generate their own copy. This file gives the header's items the names
//! the Rust code uses (`struct rdma_krust_conn_info` is [`ConnInfo`],
//! `RDMA_KRUST_RECV_DEPTH` is [`RECV_DEPTH`]) and the types it computes in,
//! and adds the wire protocol's logic ([`WireRx`] and friends). Nothing here
//! has a value or a layout of its own.
//!
//! The kernel module compiles this file and its child `wire.rs` as its
//! `crate::abi` (Kbuild cannot link a cargo crate), the `rdma-krust-abi`
//! crate as its root module; so it uses nothing but `core` and
//! `crate::uapi`.
//!
//! Conventions, as in the kernel's own uAPI headers: `reserved` fields must
//! be zero on input (`EINVAL` otherwise) and are zeroed on output; an
//! unknown command is `ENOTTY`; a known command number with the wrong size
//! or direction is `EINVAL`; an unreadable or unwritable user pointer is
//! `EFAULT`. See `Documentation/ioctl-abi.rst`.

use crate::uapi;

/// Names a header constant in Rust, in the type Rust computes with; the
/// conversion must keep the value (checked at compile time).
macro_rules! from_header {
    ($($(#[$m:meta])* $name:ident: $t:ty = $c:ident;)*) => {$(
        $(#[$m])*
        pub const $name: $t = uapi::$c as $t;
        const _: () = assert!($name as u64 == uapi::$c as u64);
    )*};
}

/// `_IOR(0xb9, 0x00, struct Version)`: the module's ABI version and commands.
pub type Version = uapi::rdma_krust_version;
/// One port of an RDMA device, in [`DeviceInfo::ports`].
pub type PortInfo = uapi::rdma_krust_port_info;
/// One RDMA device as the module's `ib_client` saw it when it was added.
pub type DeviceInfo = uapi::rdma_krust_device_info;
/// Argument of [`IOCTL_LIST_DEVICES`].
pub type DeviceList = uapi::rdma_krust_device_list;
/// An IPv4 or IPv6 address and port.
pub type Addr = uapi::rdma_krust_addr;
/// A connection's transport settings (`Documentation/transport.rst`).
pub type Transport = uapi::rdma_krust_transport;
/// What [`IOCTL_CONN_INFO`] reports about the connection of a file.
pub type ConnInfo = uapi::rdma_krust_conn_info;
/// Argument of [`IOCTL_CONNECT`].
pub type ConnectReq = uapi::rdma_krust_connect_req;
/// Argument of [`IOCTL_LISTEN`].
pub type ListenReq = uapi::rdma_krust_listen_req;
/// Argument of [`IOCTL_ACCEPT`].
pub type AcceptReq = uapi::rdma_krust_accept_req;
/// Argument of [`IOCTL_SEND`] and [`IOCTL_RECV`].
pub type Xfer = uapi::rdma_krust_xfer;
/// Argument of [`IOCTL_EXPOSE`]: a window of memory peers may reach.
pub type Expose = uapi::rdma_krust_expose;
/// Argument of [`IOCTL_REVOKE`].
pub type Revoke = uapi::rdma_krust_revoke;
/// Argument of [`IOCTL_WINDOW_READ`] and [`IOCTL_WINDOW_WRITE`].
pub type WindowIo = uapi::rdma_krust_window_io;
/// Argument of [`IOCTL_RDMA_WRITE`] and [`IOCTL_RDMA_READ`].
pub type Rdma = uapi::rdma_krust_rdma;
/// Argument of [`IOCTL_ATOMIC`].
pub type AtomicOp = uapi::rdma_krust_atomic_op;
/// Argument of [`IOCTL_BENCH`] (`Documentation/performance.rst`).
pub type Bench = uapi::rdma_krust_bench;

from_header! {
    /// Version of this ABI, bumped whenever it changes.
    ABI_VERSION: u32 = RDMA_KRUST_ABI_VERSION;
    /// The ioctl "type" byte.
    IOC_MAGIC: u32 = RDMA_KRUST_IOC_MAGIC;
    /// Length of [`DeviceInfo::name`], including the terminating NUL.
    DEVICE_NAME_LEN: usize = RDMA_KRUST_DEVICE_NAME_LEN;
    /// Ports reported per device in [`DeviceInfo::ports`].
    MAX_PORTS: usize = RDMA_KRUST_MAX_PORTS;
    /// Entries in [`Version::cmds`].
    MAX_CMDS: usize = RDMA_KRUST_MAX_CMDS;
    /// Largest [`DeviceList::capacity`].
    MAX_LIST_CAPACITY: u32 = RDMA_KRUST_MAX_LIST_CAPACITY;
    /// [`Addr::family`] of IPv4.
    AF_INET: u16 = RDMA_KRUST_AF_INET;
    /// [`Addr::family`] of IPv6.
    AF_INET6: u16 = RDMA_KRUST_AF_INET6;
    /// Connection flag: raw messages, one SEND each, no credits.
    CONN_RAW: u32 = RDMA_KRUST_CONN_RAW;
    /// Connection flag: waiters poll the CQ instead of sleeping.
    CONN_POLL: u32 = RDMA_KRUST_CONN_POLL;
    /// How long a polling waiter spins before it naps.
    POLL_SPIN_US: u32 = RDMA_KRUST_POLL_SPIN_US;
    /// Connection flag, with [`CONN_POLL`]: waiters spin without yielding.
    CONN_SPIN: u32 = RDMA_KRUST_CONN_SPIN;
    /// [`Expose::access`]: peers may RDMA READ.
    ACCESS_READ: u32 = RDMA_KRUST_ACCESS_READ;
    /// [`Expose::access`]: peers may RDMA WRITE.
    ACCESS_WRITE: u32 = RDMA_KRUST_ACCESS_WRITE;
    /// [`Expose::access`]: peers may run atomics.
    ACCESS_ATOMIC: u32 = RDMA_KRUST_ACCESS_ATOMIC;
    /// Largest window of [`IOCTL_EXPOSE`].
    MAX_WINDOW_SIZE: u64 = RDMA_KRUST_MAX_WINDOW_SIZE;
    /// Windows one file may hold.
    MAX_WINDOWS: u32 = RDMA_KRUST_MAX_WINDOWS;
    /// [`AtomicOp::op`]: compare and swap.
    ATOMIC_CMP_SWAP: u32 = RDMA_KRUST_ATOMIC_CMP_SWAP;
    /// [`AtomicOp::op`]: fetch and add.
    ATOMIC_FETCH_ADD: u32 = RDMA_KRUST_ATOMIC_FETCH_ADD;
    /// Wait used when a request's `timeout_ms` is 0, for what the peer must
    /// do; what the transport carries is waited for until it completes.
    DEFAULT_TIMEOUT_MS: u32 = RDMA_KRUST_DEFAULT_TIMEOUT_MS;

    /// [`Transport::set`]: `ack_timeout` carries a value.
    TRANSPORT_ACK_TIMEOUT: u32 = RDMA_KRUST_TRANSPORT_ACK_TIMEOUT;
    /// [`Transport::set`]: `retry_count` carries a value (active side only).
    TRANSPORT_RETRY_COUNT: u32 = RDMA_KRUST_TRANSPORT_RETRY_COUNT;
    /// [`Transport::set`]: `rnr_retry` carries a value.
    TRANSPORT_RNR_RETRY: u32 = RDMA_KRUST_TRANSPORT_RNR_RETRY;
    /// [`Transport::set`]: `min_rnr_timer` carries a value.
    TRANSPORT_MIN_RNR_TIMER: u32 = RDMA_KRUST_TRANSPORT_MIN_RNR_TIMER;
    /// [`Transport::set`]: `recv_depth` carries a value.
    TRANSPORT_RECV_DEPTH: u32 = RDMA_KRUST_TRANSPORT_RECV_DEPTH;
    /// Every [`Transport::set`] bit.
    TRANSPORT_ALL: u32 = RDMA_KRUST_TRANSPORT_ALL;
    /// Default local ACK timeout, 67 ms (`Documentation/transport.rst`).
    DEFAULT_ACK_TIMEOUT: u8 = RDMA_KRUST_DEFAULT_ACK_TIMEOUT;
    /// Default resends without progress.
    DEFAULT_RETRY_COUNT: u8 = RDMA_KRUST_DEFAULT_RETRY_COUNT;
    /// Default resends after RNR NAKs with [`CONN_RAW`]: forever.
    DEFAULT_RNR_RETRY: u8 = RDMA_KRUST_DEFAULT_RNR_RETRY;
    /// Default resends after RNR NAKs with credits, which make RNR needless.
    DEFAULT_MSG_RNR_RETRY: u8 = RDMA_KRUST_DEFAULT_MSG_RNR_RETRY;
    /// Default RNR NAK timer asked of the peer, 0.64 ms.
    DEFAULT_MIN_RNR_TIMER: u8 = RDMA_KRUST_DEFAULT_MIN_RNR_TIMER;

    /// [`Bench::op`]: SEND (raw connections only).
    BENCH_SEND: u32 = RDMA_KRUST_BENCH_SEND;
    /// [`Bench::op`]: RDMA WRITE.
    BENCH_WRITE: u32 = RDMA_KRUST_BENCH_WRITE;
    /// [`Bench::op`]: RDMA READ.
    BENCH_READ: u32 = RDMA_KRUST_BENCH_READ;
    /// [`Bench::op`]: compare and swap, 8 bytes.
    BENCH_CAS: u32 = RDMA_KRUST_BENCH_CAS;
    /// [`Bench::op`]: fetch and add, 8 bytes.
    BENCH_FADD: u32 = RDMA_KRUST_BENCH_FADD;
    /// [`Bench::mode`]: one operation at a time.
    BENCH_LAT: u32 = RDMA_KRUST_BENCH_LAT;
    /// [`Bench::mode`]: `depth` operations in flight.
    BENCH_BW: u32 = RDMA_KRUST_BENCH_BW;
    /// [`Bench::mode`]: the other end of a SEND ping-pong.
    BENCH_RESPOND: u32 = RDMA_KRUST_BENCH_RESPOND;
    /// [`Bench::mode`]: the other end of SEND bandwidth.
    BENCH_SINK: u32 = RDMA_KRUST_BENCH_SINK;
    /// [`Bench::mode`]: WRITE latency as `ib_write_lat` measures it.
    BENCH_PINGPONG: u32 = RDMA_KRUST_BENCH_PINGPONG;
    /// Largest [`Bench::iters`].
    BENCH_MAX_ITERS: u32 = RDMA_KRUST_BENCH_MAX_ITERS;
    /// Largest [`Bench::depth`].
    BENCH_MAX_DEPTH: u32 = RDMA_KRUST_BENCH_MAX_DEPTH;
    /// SEND bandwidth on iWARP: the sink counts back after every this many.
    BENCH_COUNT_EVERY: u32 = RDMA_KRUST_BENCH_COUNT_EVERY;

    /// Largest message of [`IOCTL_SEND`] / [`IOCTL_RECV`].
    MAX_MSG_SIZE: u64 = RDMA_KRUST_MAX_MSG_SIZE;
    /// Receives a side keeps posted: the most, and a raw connection's
    /// default.
    RECV_DEPTH: u32 = RDMA_KRUST_RECV_DEPTH;
    /// A message connection's default receive depth.
    MSG_RECV_DEPTH: u32 = RDMA_KRUST_MSG_RECV_DEPTH;
    /// The least receive depth: a message needs a credit more than its one
    /// receive.
    MIN_RECV_DEPTH: u32 = RDMA_KRUST_MIN_RECV_DEPTH;
    /// Size of each receive buffer of a raw connection.
    RECV_BUF_SIZE: u32 = RDMA_KRUST_RECV_BUF_SIZE;
    /// Size of each receive buffer of a message connection.
    MSG_RECV_BUF_SIZE: u32 = RDMA_KRUST_MSG_RECV_BUF_SIZE;
    /// Size of the header in front of every message.
    WIRE_HDR_SIZE: u32 = RDMA_KRUST_WIRE_HDR_SIZE;
    /// Longest message sent inline; a longer one is announced and READ.
    MAX_INLINE_MSG: u32 = RDMA_KRUST_MAX_INLINE_MSG;
    /// Most segments an announce names.
    READ_SEGS: u32 = RDMA_KRUST_READ_SEGS;
    /// Largest segment of an announce.
    READ_SEG_SIZE: u32 = RDMA_KRUST_READ_SEG_SIZE;
    /// Announces a side may have waiting for the peer's DONE at once.
    ANNOUNCE_WINDOW: u32 = RDMA_KRUST_ANNOUNCE_WINDOW;
    /// Size of one segment in an announce.
    READ_SEG_WIRE_SIZE: u32 = RDMA_KRUST_READ_SEG_WIRE_SIZE;
    /// Size of the setup data a connect request or reply carries.
    SETUP_DATA_SIZE: usize = RDMA_KRUST_SETUP_DATA_SIZE;
    /// Setup flag: this side READs announced messages.
    SETUP_READS: u8 = RDMA_KRUST_SETUP_READS;
    /// Wire-header flag: first SEND of a message.
    WIRE_FIRST: u8 = RDMA_KRUST_WIRE_FIRST;
    /// Wire-header flag: last SEND of a message.
    WIRE_LAST: u8 = RDMA_KRUST_WIRE_LAST;
    /// Wire-header flag: no message, only credits (and DONE).
    WIRE_CREDIT: u8 = RDMA_KRUST_WIRE_CREDIT;
    /// Wire-header flag: the sender has fewer than 2 credits left.
    WIRE_LOW: u8 = RDMA_KRUST_WIRE_LOW;
    /// Wire-header flag: an announce, whose payload names what to READ.
    WIRE_READ: u8 = RDMA_KRUST_WIRE_READ;
    /// Wire-header flag: the sender has READ the receiver's announce.
    WIRE_DONE: u8 = RDMA_KRUST_WIRE_DONE;
    /// Every flag a header of [`WIRE_VERSION`] may carry.
    WIRE_FLAGS: u8 = RDMA_KRUST_WIRE_FLAGS;
    /// Version byte of the wire header and of the setup data.
    WIRE_VERSION: u8 = RDMA_KRUST_WIRE_VERSION;
}

/// The connection states of [`ConnInfo::state`].
pub mod state {
    use crate::uapi;

    from_header! {
        /// Nothing yet.
        IDLE: u32 = RDMA_KRUST_STATE_IDLE;
        /// `IOCTL_LISTEN` done, no connection yet.
        LISTENING: u32 = RDMA_KRUST_STATE_LISTENING;
        /// Resolving, connecting or accepting.
        CONNECTING: u32 = RDMA_KRUST_STATE_CONNECTING;
        /// Operations are allowed.
        CONNECTED: u32 = RDMA_KRUST_STATE_CONNECTED;
        /// Disconnected, failed, or its device went away.
        CLOSED: u32 = RDMA_KRUST_STATE_CLOSED;
    }
}

/// The header's commands, each named once: a constant for each, and
/// [`ALL_CMDS`], all of them in the order given (the header's, by number).
macro_rules! commands {
    ($($(#[$m:meta])* $name:ident: u32 = $c:ident;)*) => {
        from_header! { $($(#[$m])* $name: u32 = $c;)* }

        /// Every command of this ABI version, in number order.
        pub const ALL_CMDS: &[u32] = &[$($name),*];
    };
}

commands! {
    /// `RDMA_KRUST_IOCTL_VERSION`: the module's ABI version and commands.
    IOCTL_VERSION: u32 = RKRUST_CMD_VERSION;
    /// `RDMA_KRUST_IOCTL_LIST_DEVICES`: the RDMA devices.
    IOCTL_LIST_DEVICES: u32 = RKRUST_CMD_LIST_DEVICES;
    /// `RDMA_KRUST_IOCTL_CONNECT`: connect to a listener.
    IOCTL_CONNECT: u32 = RKRUST_CMD_CONNECT;
    /// `RDMA_KRUST_IOCTL_LISTEN`: listen for one connection.
    IOCTL_LISTEN: u32 = RKRUST_CMD_LISTEN;
    /// `RDMA_KRUST_IOCTL_ACCEPT`: accept the connection listened for.
    IOCTL_ACCEPT: u32 = RKRUST_CMD_ACCEPT;
    /// `RDMA_KRUST_IOCTL_CONN_INFO`: the connection's state and settings.
    IOCTL_CONN_INFO: u32 = RKRUST_CMD_CONN_INFO;
    /// `RDMA_KRUST_IOCTL_DISCONNECT`: close the connection.
    IOCTL_DISCONNECT: u32 = RKRUST_CMD_DISCONNECT;
    /// `RDMA_KRUST_IOCTL_SEND`: send a message.
    IOCTL_SEND: u32 = RKRUST_CMD_SEND;
    /// `RDMA_KRUST_IOCTL_RECV`: receive a message.
    IOCTL_RECV: u32 = RKRUST_CMD_RECV;
    /// `RDMA_KRUST_IOCTL_EXPOSE`: register a window for peers.
    IOCTL_EXPOSE: u32 = RKRUST_CMD_EXPOSE;
    /// `RDMA_KRUST_IOCTL_REVOKE`: invalidate and free a window.
    IOCTL_REVOKE: u32 = RKRUST_CMD_REVOKE;
    /// `RDMA_KRUST_IOCTL_WINDOW_READ`: copy a window out.
    IOCTL_WINDOW_READ: u32 = RKRUST_CMD_WINDOW_READ;
    /// `RDMA_KRUST_IOCTL_WINDOW_WRITE`: copy into a window.
    IOCTL_WINDOW_WRITE: u32 = RKRUST_CMD_WINDOW_WRITE;
    /// `RDMA_KRUST_IOCTL_RDMA_WRITE`: RDMA WRITE to a peer's window.
    IOCTL_RDMA_WRITE: u32 = RKRUST_CMD_RDMA_WRITE;
    /// `RDMA_KRUST_IOCTL_RDMA_READ`: RDMA READ from a peer's window.
    IOCTL_RDMA_READ: u32 = RKRUST_CMD_RDMA_READ;
    /// `RDMA_KRUST_IOCTL_ATOMIC`: compare-and-swap or fetch-and-add.
    IOCTL_ATOMIC: u32 = RKRUST_CMD_ATOMIC;
    /// `RDMA_KRUST_IOCTL_BENCH`: an in-kernel benchmark run.
    IOCTL_BENCH: u32 = RKRUST_CMD_BENCH;
}

const _: () = assert!(ALL_CMDS.len() <= MAX_CMDS);

const IOC_NRBITS: u32 = 8;
const IOC_TYPEBITS: u32 = 8;
const IOC_SIZEBITS: u32 = 14;
const IOC_NRSHIFT: u32 = 0;
const IOC_TYPESHIFT: u32 = IOC_NRSHIFT + IOC_NRBITS;
const IOC_SIZESHIFT: u32 = IOC_TYPESHIFT + IOC_TYPEBITS;
const IOC_DIRSHIFT: u32 = IOC_SIZESHIFT + IOC_SIZEBITS;

/// `_IOC_WRITE`: userspace writes, the kernel reads.
pub const IOC_WRITE: u32 = 1;
/// `_IOC_READ`: the kernel writes, userspace reads.
pub const IOC_READ: u32 = 2;

/// `_IOC(dir, type, nr, size)` from `include/uapi/asm-generic/ioctl.h`.
pub const fn ioc(dir: u32, ty: u32, nr: u32, size: usize) -> u32 {
    (dir << IOC_DIRSHIFT)
        | (ty << IOC_TYPESHIFT)
        | (nr << IOC_NRSHIFT)
        | ((size as u32) << IOC_SIZESHIFT)
}

/// `_IOC_TYPE(cmd)`.
pub const fn ioc_type(cmd: u32) -> u32 {
    (cmd >> IOC_TYPESHIFT) & ((1 << IOC_TYPEBITS) - 1)
}

/// `_IOC_NR(cmd)`.
pub const fn ioc_nr(cmd: u32) -> u32 {
    (cmd >> IOC_NRSHIFT) & ((1 << IOC_NRBITS) - 1)
}

impl Transport {
    /// How long the transport's retries of one request take, in ms rounded
    /// up: `retry_count + 1` ACK timeouts of 4.096 us * 2^`ack_timeout`
    /// (`Documentation/transport.rst`). After a peer's close, the module
    /// waits at most this long for the answers to what is in flight.
    pub fn retries_ms(&self) -> u64 {
        // 4.096 us * 2^ack_timeout, as ns; at most 2^43 ns (31).
        let ack_ns = 4096u64 << self.ack_timeout.min(31);
        (ack_ns * (u64::from(self.retry_count) + 1)).div_ceil(1_000_000)
    }
}

// The sizes are the ABI: a change in the header that moves one fails here.
const _: () = assert!(core::mem::size_of::<Version>() == 136);
const _: () = assert!(core::mem::size_of::<Addr>() == 24);
const _: () = assert!(core::mem::size_of::<Transport>() == 12);
const _: () = assert!(core::mem::size_of::<ConnInfo>() == 136);
const _: () = assert!(core::mem::size_of::<ConnectReq>() == 188);
const _: () = assert!(core::mem::size_of::<ListenReq>() == 52);
const _: () = assert!(core::mem::size_of::<AcceptReq>() == 144);
const _: () = assert!(core::mem::size_of::<Xfer>() == 24);
const _: () = assert!(core::mem::size_of::<Expose>() == 32);
const _: () = assert!(core::mem::size_of::<Revoke>() == 8);
const _: () = assert!(core::mem::size_of::<WindowIo>() == 32);
const _: () = assert!(core::mem::size_of::<Rdma>() == 32);
const _: () = assert!(core::mem::size_of::<AtomicOp>() == 48);
const _: () = assert!(core::mem::size_of::<Bench>() == 72);
const _: () = assert!(core::mem::size_of::<PortInfo>() == 16);
const _: () = assert!(core::mem::size_of::<DeviceInfo>() == 168);
const _: () = assert!(core::mem::size_of::<DeviceList>() == 24);

mod wire;
pub use wire::*;
