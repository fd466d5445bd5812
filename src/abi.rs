// SPDX-License-Identifier: GPL-2.0

//! The `/dev/rdma_krust` ioctl ABI: the one definition.
//!
//! This file is compiled twice: into the kernel module (as `crate::abi`) and
//! into the userspace tool (`userspace-peer`, through `#[path]`). It therefore
//! uses nothing but `core`. Every structure is `#[repr(C)]`, has no implicit
//! padding, and carries user pointers as `u64`, so the layout is the same for
//! 32-bit and 64-bit callers.
//!
//! Conventions, as in the kernel's own uAPI headers:
//! - `reserved` fields must be zero on input (`EINVAL` otherwise) and are
//!   zeroed on output;
//! - an unknown command is `ENOTTY`; a known command number with the wrong
//!   size or direction is `EINVAL`; an unreadable or unwritable user pointer is
//!   `EFAULT`.
//!
//! See `Documentation/ioctl-abi.rst`.

/// Version of this ABI, bumped whenever it changes (3: `CONN_POLL`,
/// `BENCH_PINGPONG`, `Bench::window`; 4: [`Transport`] in `ConnectReq`,
/// `ListenReq` and `ConnInfo`, and a `timeout_ms` of 0 on one-sided
/// operations waits for the transport; 6: `Bench::samples` on a bandwidth
/// run takes each message's post and completion time, and its `total_ns`
/// starts at the first post; 7: `DeviceInfo::max_window`; 8: [`CONN_SPIN`]). `IOCTL_VERSION`
/// reports it, and `rdma-krust abi` checks it against its own.
pub const ABI_VERSION: u32 = 9;

/// The ioctl "type" byte (see `Documentation/userspace-api/ioctl/ioctl-number.rst`).
pub const IOC_MAGIC: u32 = 0xb9;

/// Length of [`DeviceInfo::name`], including the terminating NUL.
pub const DEVICE_NAME_LEN: usize = 64;

/// Ports reported per device in [`DeviceInfo::ports`].
pub const MAX_PORTS: usize = 4;

/// Entries in [`Version::cmds`].
pub const MAX_CMDS: usize = 32;

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

/// Output of [`IOCTL_VERSION`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Version {
    /// [`ABI_VERSION`] of the running module.
    pub abi_version: u32,
    /// Number of valid entries in `cmds`.
    pub n_cmds: u32,
    /// The full command numbers the module accepts, as it was compiled.
    ///
    /// A command number encodes its argument size, so comparing these with
    /// the caller's own numbers checks both sides agree on every layout.
    pub cmds: [u32; MAX_CMDS],
}

/// One port of an RDMA device, in [`DeviceInfo::ports`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortInfo {
    /// Port number (starts at 1 for a channel adapter).
    pub port_num: u32,
    /// `enum ib_port_state` when the device was added (4 is ACTIVE).
    pub state: u32,
    /// `enum ib_mtu` (1 = 256 bytes ... 5 = 4096 bytes).
    pub active_mtu: u32,
    /// `IB_LINK_LAYER_*`: 1 InfiniBand, 2 Ethernet (RoCE, iWARP).
    pub link_layer: u32,
}

/// One RDMA device as the module's `ib_client` saw it when it was added.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// NUL-terminated device name, e.g. `rxe0`.
    pub name: [u8; DEVICE_NAME_LEN],
    /// Node GUID, host byte order (the big-endian wire value, converted).
    pub node_guid: u64,
    /// `ib_device_attr::max_mr_size`.
    pub max_mr_size: u64,
    /// `ib_device_attr::max_qp_rd_atom`: the most READ/atomic requests one QP
    /// serves as a responder.
    pub max_qp_rd_atom: u32,
    /// `ib_device_attr::max_qp_init_rd_atom`: the most READ/atomic requests
    /// one QP may have outstanding as initiator.
    pub max_qp_init_rd_atom: u32,
    /// `enum ib_atomic_cap`: 0 none, 1 HCA, 2 global.
    pub atomic_cap: u32,
    /// Number of ports the device has; at most [`MAX_PORTS`] are in `ports`.
    pub num_ports: u32,
    /// The first `min(num_ports, MAX_PORTS)` ports.
    pub ports: [PortInfo; MAX_PORTS],
    /// The largest window (`IOCTL_EXPOSE`'s `len`, at most
    /// [`MAX_WINDOW_SIZE`]) the device can register in one region: its
    /// fast-registration page list (`max_fast_reg_page_list_len`), page
    /// sizes, `max_mr_size` and the DMA API's largest mapping allow it.
    /// 0 where unknown (the tool's libibverbs view).
    pub max_window: u64,
}

impl Default for DeviceInfo {
    fn default() -> Self {
        Self {
            name: [0; DEVICE_NAME_LEN],
            node_guid: 0,
            max_mr_size: 0,
            max_qp_rd_atom: 0,
            max_qp_init_rd_atom: 0,
            atomic_cap: 0,
            num_ports: 0,
            ports: [PortInfo::default(); MAX_PORTS],
            max_window: 0,
        }
    }
}

/// Argument of [`IOCTL_LIST_DEVICES`].
///
/// The usual two-call pattern: pass `capacity = 0` to learn `count`, then
/// pass an array of `capacity` entries at `devices`. The kernel writes
/// `min(capacity, count)` entries and always sets `count` to the total.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceList {
    /// User pointer to an array of `capacity` [`DeviceInfo`].
    pub devices: u64,
    /// Entries the array at `devices` holds; at most [`MAX_LIST_CAPACITY`].
    pub capacity: u32,
    /// Output: the number of devices the module knows.
    pub count: u32,
    /// Must be zero.
    pub reserved: u64,
}

/// Largest [`DeviceList::capacity`] accepted (`EINVAL` above it).
pub const MAX_LIST_CAPACITY: u32 = 256;

/// `AF_INET`, for [`Addr::family`].
pub const AF_INET: u16 = 2;
/// `AF_INET6`, for [`Addr::family`].
pub const AF_INET6: u16 = 10;

/// An IPv4 or IPv6 address and port.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Addr {
    /// [`AF_INET`] or [`AF_INET6`].
    pub family: u16,
    /// Port, host byte order.
    pub port: u16,
    /// Must be zero.
    pub reserved: u32,
    /// The address, network byte order; IPv4 uses the first 4 bytes.
    pub addr: [u8; 16],
}

/// Connection states, in [`ConnInfo::state`].
pub mod state {
    /// Nothing yet.
    pub const IDLE: u32 = 0;
    /// `IOCTL_LISTEN` done, no connection yet.
    pub const LISTENING: u32 = 1;
    /// Resolving, connecting or accepting.
    pub const CONNECTING: u32 = 2;
    /// Connected: operations are allowed.
    pub const CONNECTED: u32 = 3;
    /// Disconnected, failed, or its device went away.
    pub const CLOSED: u32 = 4;
}

/// A connection, as [`IOCTL_CONN_INFO`], [`IOCTL_CONNECT`] and
/// [`IOCTL_ACCEPT`] report it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnInfo {
    /// One of [`state`].
    pub state: u32,
    /// When closed: the errno that closed it (positive), else 0.
    pub error: u32,
    /// Negotiated: READ/atomic requests this side serves, read back from the
    /// QP (`max_dest_rd_atomic`, `ib_query_qp()`).
    pub responder_resources: u32,
    /// Negotiated: READ/atomic requests this side may have outstanding, read
    /// back from the QP (`max_rd_atomic`).
    pub initiator_depth: u32,
    /// What this side asked for, after defaults and clamping to the device.
    pub asked_responder_resources: u32,
    /// What this side asked for, after defaults and clamping to the device.
    pub asked_initiator_depth: u32,
    /// Passive side: what the peer's request asked this side to serve
    /// (`responder_resources`) and to issue (`initiator_depth`); else 0.
    pub peer_responder_resources: u32,
    /// See `peer_responder_resources`.
    pub peer_initiator_depth: u32,
    /// The device's `max_qp_rd_atom`.
    pub dev_max_qp_rd_atom: u32,
    /// The device's `max_qp_init_rd_atom`.
    pub dev_max_qp_init_rd_atom: u32,
    /// Send credits this side holds now (see `Documentation/flow-control.rst`).
    pub credits: u32,
    /// Receives this side keeps posted: its receive depth
    /// ([`Transport::recv_depth`]).
    pub recv_depth: u32,
    /// Receives the peer keeps posted, from its setup data ([`SetupData`];
    /// [`RECV_DEPTH`] if it sent none): the most credits this side holds.
    pub peer_recv_depth: u32,
    /// 1 if the device speaks iWARP (its READs land in registered sinks,
    /// see `Documentation/providers.rst`), else 0.
    pub iwarp: u32,
    /// READ sinks this connection registered so far (iWARP: one per 256 KiB
    /// READ request; always 0 elsewhere).
    pub read_sinks: u32,
    /// Once connected: the transport settings the QP runs with, read back
    /// from it (`ib_query_qp()`); `set` has every bit, or none on iWARP,
    /// where they do not apply.
    pub transport: Transport,
    /// Name of the RDMA device, NUL-terminated.
    pub device: [u8; DEVICE_NAME_LEN],
}

impl Default for ConnInfo {
    fn default() -> Self {
        Self {
            state: 0,
            error: 0,
            responder_resources: 0,
            initiator_depth: 0,
            asked_responder_resources: 0,
            asked_initiator_depth: 0,
            peer_responder_resources: 0,
            peer_initiator_depth: 0,
            dev_max_qp_rd_atom: 0,
            dev_max_qp_init_rd_atom: 0,
            credits: 0,
            recv_depth: 0,
            peer_recv_depth: 0,
            iwarp: 0,
            read_sinks: 0,
            transport: Transport::default(),
            device: [0; DEVICE_NAME_LEN],
        }
    }
}

/// Argument of [`IOCTL_CONNECT`].
///
/// `responder_resources` and `initiator_depth` are what this side asks
/// for: 0 means the device's maximum; anything larger than the device allows
/// is clamped to it, and `info` reports what was asked and what was agreed.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnectReq {
    /// The listener to connect to.
    pub dst: Addr,
    /// Milliseconds for each step of the connect (address resolution, route
    /// resolution, connection); 0 means [`DEFAULT_TIMEOUT_MS`].
    pub timeout_ms: u32,
    /// READ/atomic requests this side will serve; 0 = device maximum.
    pub responder_resources: u32,
    /// READ/atomic requests this side will issue; 0 = device maximum.
    pub initiator_depth: u32,
    /// [`CONN_RAW`], [`CONN_POLL`], [`CONN_SPIN`], or zero.
    pub flags: u32,
    /// The transport settings; what `set` leaves out takes the defaults.
    pub transport: Transport,
    /// Output: the connection.
    pub info: ConnInfo,
}

/// A connection's transport settings: [`Transport`], its bits and the
/// module's defaults.
#[path = "transport.rs"]
mod transport;
pub use transport::*;

/// Connection flag: raw messages. Each `IOCTL_SEND` is one SEND of exactly
/// the caller's bytes (at most [`RECV_BUF_SIZE`]) and each `IOCTL_RECV` one
/// received buffer: no header, no fragments, no credits; the peer's receives
/// are the caller's business, as with bare verbs. This is how rping's
/// protocol runs over the module (see `Documentation/rping.rst`).
pub const CONN_RAW: u32 = 1;

/// Connection flag: busy polling. The connection's completions are reaped
/// only by the threads that wait on it (`IB_POLL_DIRECT`), which poll the
/// completion queue instead of sleeping until ib_core's workqueue has run
/// the handlers; this is what perftest does from userspace. A waiter spins
/// for up to [`POLL_SPIN_US`] without a completion, then naps a jiffy at a
/// time between polls. Nothing is reaped while no thread waits: credits and
/// received messages wait in the completion queue for the next call.
pub const CONN_POLL: u32 = 2;

/// How long a waiter on a [`CONN_POLL`] connection spins without seeing a
/// completion before it naps between polls.
pub const POLL_SPIN_US: u32 = 2000;

/// Connection flag, with [`CONN_POLL`] only (else `EINVAL`): waiters spin
/// as perftest's pollers do. They never yield the CPU or nap between
/// polls: they give it up only where the scheduler takes it from them
/// (`cond_resched()`: a used-up slice, a wake-up that preempts), and stop
/// at their timeout or a signal. Without it a waiter yields after each
/// poll, so that a provider's own threads on the same CPU run at once.
/// Which one is faster depends on where the provider does its work
/// (`Documentation/performance.rst`).
pub const CONN_SPIN: u32 = 4;

/// Argument of [`IOCTL_LISTEN`].
///
/// The fd listens on `addr` and takes the first connection request that
/// arrives; [`IOCTL_ACCEPT`] waits for it. `responder_resources` and
/// `initiator_depth` cap what is offered (0 = device maximum); the offer is
/// also bounded by what the peer asked for.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListenReq {
    /// Address and port to listen on.
    pub addr: Addr,
    /// Cap on READ/atomic requests served; 0 = device maximum.
    pub responder_resources: u32,
    /// Cap on READ/atomic requests issued; 0 = device maximum.
    pub initiator_depth: u32,
    /// [`CONN_RAW`], [`CONN_POLL`], [`CONN_SPIN`], or zero.
    pub flags: u32,
    /// Must be zero.
    pub reserved: u32,
    /// The accepted connection's transport settings; `retry_count` is the
    /// connecting side's and may not be set here.
    pub transport: Transport,
}

/// Argument of [`IOCTL_ACCEPT`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AcceptReq {
    /// Milliseconds to wait; 0 means [`DEFAULT_TIMEOUT_MS`].
    pub timeout_ms: u32,
    /// Must be zero.
    pub reserved: u32,
    /// Output: the connection.
    pub info: ConnInfo,
}

/// Argument of [`IOCTL_SEND`] and [`IOCTL_RECV`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Xfer {
    /// User pointer to the data (SEND) or to room for it (RECV).
    pub buf: u64,
    /// SEND: bytes to send, 0 to [`MAX_MSG_SIZE`]. RECV: room at `buf`;
    /// on return, the received message's length.
    pub len: u64,
    /// Milliseconds to wait for the peer: for a message (RECV), for
    /// credits (SEND); 0 means [`DEFAULT_TIMEOUT_MS`]. Fragments already
    /// posted are waited for until the transport's verdict.
    pub timeout_ms: u32,
    /// Must be zero.
    pub flags: u32,
}

/// [`Expose::access`]: peers may RDMA READ the window.
pub const ACCESS_READ: u32 = 1;
/// [`Expose::access`]: peers may RDMA WRITE the window.
pub const ACCESS_WRITE: u32 = 2;
/// [`Expose::access`]: peers may run atomics on the window.
pub const ACCESS_ATOMIC: u32 = 4;

/// Largest window of [`IOCTL_EXPOSE`] (512 pages, what rxe's fast
/// registration maps).
pub const MAX_WINDOW_SIZE: u64 = 2 << 20;

/// Windows one connection may have exposed at once.
pub const MAX_WINDOWS: u32 = 16;

/// Argument of [`IOCTL_EXPOSE`]: expose a zeroed kernel buffer to the peer.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Expose {
    /// Bytes, 1 to [`MAX_WINDOW_SIZE`].
    pub len: u64,
    /// `ACCESS_*` bits, at least one; nothing more is granted.
    pub access: u32,
    /// Must be zero.
    pub reserved: u32,
    /// Output: the address the peer uses for byte 0. Not a kernel address.
    pub addr: u64,
    /// Output: the remote key.
    pub rkey: u32,
    /// Output: the window's id on this fd, for the other window commands.
    pub id: u32,
}

/// Argument of [`IOCTL_REVOKE`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Revoke {
    /// The window's id.
    pub id: u32,
    /// Must be zero.
    pub reserved: u32,
}

/// Argument of [`IOCTL_WINDOW_READ`] and [`IOCTL_WINDOW_WRITE`]: copy between
/// a window and user memory.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowIo {
    /// The window's id.
    pub id: u32,
    /// Must be zero.
    pub reserved: u32,
    /// Offset in the window.
    pub offset: u64,
    /// User pointer.
    pub buf: u64,
    /// Bytes; `offset + len` must be within the window.
    pub len: u64,
}

/// Argument of [`IOCTL_RDMA_WRITE`] and [`IOCTL_RDMA_READ`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rdma {
    /// Peer address (from its window).
    pub remote_addr: u64,
    /// Peer key.
    pub rkey: u32,
    /// Milliseconds to wait; 0 waits for the transport's verdict: the
    /// operation completes, or fails once the transport's retries are spent
    /// ([`Transport`]), or a signal ends the wait.
    pub timeout_ms: u32,
    /// User pointer: source (WRITE) or destination (READ).
    pub buf: u64,
    /// Bytes, 1 to [`MAX_MSG_SIZE`].
    pub len: u64,
}

/// [`AtomicOp::op`]: compare-and-swap.
pub const ATOMIC_CMP_SWAP: u32 = 0;
/// [`AtomicOp::op`]: fetch-and-add.
pub const ATOMIC_FETCH_ADD: u32 = 1;

/// Argument of [`IOCTL_ATOMIC`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicOp {
    /// Peer address, 8-byte aligned (`EINVAL` otherwise).
    pub remote_addr: u64,
    /// Peer key.
    pub rkey: u32,
    /// [`ATOMIC_CMP_SWAP`] or [`ATOMIC_FETCH_ADD`].
    pub op: u32,
    /// CAS: the value expected. FADD: the value added.
    pub compare_add: u64,
    /// CAS: the value stored on a match. FADD: must be zero.
    pub swap: u64,
    /// Milliseconds to wait; 0 waits for the transport's verdict, as
    /// [`Rdma::timeout_ms`].
    pub timeout_ms: u32,
    /// Must be zero.
    pub reserved: u32,
    /// Output: the remote value before the operation.
    pub result: u64,
}

/// The benchmark's argument and constants.
#[path = "benchmark.rs"]
mod benchmark;
pub use benchmark::*;

/// Wait used when a request's `timeout_ms` is 0, for what depends on the
/// peer (a connection, a message, credits); what the transport carries is
/// waited for until it completes or fails.
pub const DEFAULT_TIMEOUT_MS: u32 = 10_000;

/// The message protocol on the wire: its constants, its header and the
/// checks of what a peer sends (`Documentation/wire-protocol.rst`).
#[path = "wire.rs"]
mod wire;
pub use wire::*;

/// `_IOR(0xb9, 0x00, struct Version)`: the module's ABI version and commands.
pub const IOCTL_VERSION: u32 = ioc(IOC_READ, IOC_MAGIC, 0x00, core::mem::size_of::<Version>());

/// `_IOWR(0xb9, 0x01, struct DeviceList)`: list the RDMA devices.
pub const IOCTL_LIST_DEVICES: u32 = ioc(
    IOC_READ | IOC_WRITE,
    IOC_MAGIC,
    0x01,
    core::mem::size_of::<DeviceList>(),
);

/// `_IOWR(0xb9, 0x10, struct ConnectReq)`: connect this fd to a listener.
pub const IOCTL_CONNECT: u32 = ioc(
    IOC_READ | IOC_WRITE,
    IOC_MAGIC,
    0x10,
    core::mem::size_of::<ConnectReq>(),
);

/// `_IOW(0xb9, 0x11, struct ListenReq)`: listen for one connection.
pub const IOCTL_LISTEN: u32 = ioc(
    IOC_WRITE,
    IOC_MAGIC,
    0x11,
    core::mem::size_of::<ListenReq>(),
);

/// `_IOWR(0xb9, 0x12, struct AcceptReq)`: wait for the listened-for
/// connection to be established.
pub const IOCTL_ACCEPT: u32 = ioc(
    IOC_READ | IOC_WRITE,
    IOC_MAGIC,
    0x12,
    core::mem::size_of::<AcceptReq>(),
);

/// `_IOR(0xb9, 0x13, struct ConnInfo)`: the connection's state and
/// negotiated parameters.
pub const IOCTL_CONN_INFO: u32 = ioc(IOC_READ, IOC_MAGIC, 0x13, core::mem::size_of::<ConnInfo>());

/// `_IO(0xb9, 0x14)`: disconnect.
pub const IOCTL_DISCONNECT: u32 = ioc(0, IOC_MAGIC, 0x14, 0);

/// `_IOW(0xb9, 0x20, struct Xfer)`: send one message.
pub const IOCTL_SEND: u32 = ioc(IOC_WRITE, IOC_MAGIC, 0x20, core::mem::size_of::<Xfer>());

/// `_IOWR(0xb9, 0x21, struct Xfer)`: receive one message.
pub const IOCTL_RECV: u32 = ioc(
    IOC_READ | IOC_WRITE,
    IOC_MAGIC,
    0x21,
    core::mem::size_of::<Xfer>(),
);

/// `_IOWR(0xb9, 0x30, struct Expose)`: expose a window to the peer.
pub const IOCTL_EXPOSE: u32 = ioc(
    IOC_READ | IOC_WRITE,
    IOC_MAGIC,
    0x30,
    core::mem::size_of::<Expose>(),
);

/// `_IOW(0xb9, 0x31, struct Revoke)`: invalidate a window's key and free it.
pub const IOCTL_REVOKE: u32 = ioc(IOC_WRITE, IOC_MAGIC, 0x31, core::mem::size_of::<Revoke>());

/// `_IOW(0xb9, 0x32, struct WindowIo)`: copy from a window to user memory.
pub const IOCTL_WINDOW_READ: u32 =
    ioc(IOC_WRITE, IOC_MAGIC, 0x32, core::mem::size_of::<WindowIo>());

/// `_IOW(0xb9, 0x33, struct WindowIo)`: copy from user memory to a window.
pub const IOCTL_WINDOW_WRITE: u32 =
    ioc(IOC_WRITE, IOC_MAGIC, 0x33, core::mem::size_of::<WindowIo>());

/// `_IOW(0xb9, 0x34, struct Rdma)`: RDMA WRITE user memory to the peer.
pub const IOCTL_RDMA_WRITE: u32 = ioc(IOC_WRITE, IOC_MAGIC, 0x34, core::mem::size_of::<Rdma>());

/// `_IOW(0xb9, 0x35, struct Rdma)`: RDMA READ from the peer to user memory.
pub const IOCTL_RDMA_READ: u32 = ioc(IOC_WRITE, IOC_MAGIC, 0x35, core::mem::size_of::<Rdma>());

/// `_IOWR(0xb9, 0x36, struct AtomicOp)`: compare-and-swap or fetch-and-add.
pub const IOCTL_ATOMIC: u32 = ioc(
    IOC_READ | IOC_WRITE,
    IOC_MAGIC,
    0x36,
    core::mem::size_of::<AtomicOp>(),
);

/// `_IOWR(0xb9, 0x40, struct Bench)`: run a benchmark loop in the kernel.
pub const IOCTL_BENCH: u32 = ioc(
    IOC_READ | IOC_WRITE,
    IOC_MAGIC,
    0x40,
    core::mem::size_of::<Bench>(),
);

/// Every command of this ABI version, in number order.
pub const ALL_CMDS: &[u32] = &[
    IOCTL_VERSION,
    IOCTL_LIST_DEVICES,
    IOCTL_CONNECT,
    IOCTL_LISTEN,
    IOCTL_ACCEPT,
    IOCTL_CONN_INFO,
    IOCTL_DISCONNECT,
    IOCTL_SEND,
    IOCTL_RECV,
    IOCTL_EXPOSE,
    IOCTL_REVOKE,
    IOCTL_WINDOW_READ,
    IOCTL_WINDOW_WRITE,
    IOCTL_RDMA_WRITE,
    IOCTL_RDMA_READ,
    IOCTL_ATOMIC,
    IOCTL_BENCH,
];

// Sizes are part of the ABI: a change here is an ABI change.
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
const _: () = assert!(ALL_CMDS.len() <= MAX_CMDS);
