// SPDX-License-Identifier: GPL-2.0

//! The in-kernel benchmark's part of the ABI: [`Bench`], the argument of
//! `IOCTL_BENCH`, and its operations, modes and bounds
//! (`Documentation/performance.rst`). A child of `abi`, so compiled into the
//! module and the tool alike; `core` only.

/// [`Bench::op`]: SEND (latency: ping-pong, RTT/2; needs a raw connection
/// and a peer running the responder).
pub const BENCH_SEND: u32 = 0;
/// [`Bench::op`]: RDMA WRITE.
pub const BENCH_WRITE: u32 = 1;
/// [`Bench::op`]: RDMA READ.
pub const BENCH_READ: u32 = 2;
/// [`Bench::op`]: compare-and-swap (8 bytes).
pub const BENCH_CAS: u32 = 3;
/// [`Bench::op`]: fetch-and-add (8 bytes).
pub const BENCH_FADD: u32 = 4;

/// [`Bench::mode`]: latency, one operation at a time.
pub const BENCH_LAT: u32 = 0;
/// [`Bench::mode`]: bandwidth, `depth` operations in flight.
pub const BENCH_BW: u32 = 1;
/// [`Bench::mode`]: the other end of a ping-pong (SEND's, or WRITE's with
/// [`BENCH_PINGPONG`]): wait for the peer's message, send it back.
pub const BENCH_RESPOND: u32 = 2;
/// [`Bench::mode`]: the SEND bandwidth loop's other end: receive.
pub const BENCH_SINK: u32 = 3;
/// [`Bench::mode`], WRITE only: latency as perftest's `ib_write_lat`
/// measures it, half the round trip of a WRITE ping-pong. Each end WRITEs
/// `size` bytes into the other's window and waits, polling the last byte of
/// its own window [`Bench::window`], for the other's WRITE to land; that
/// byte carries the iteration number (mod 256, from 1). The other end runs
/// [`BENCH_RESPOND`]. Both windows must be freshly exposed (zeroed).
pub const BENCH_PINGPONG: u32 = 4;

/// Largest [`Bench::iters`].
pub const BENCH_MAX_ITERS: u32 = 1_000_000;
/// Largest [`Bench::depth`].
pub const BENCH_MAX_DEPTH: u32 = 64;

/// Argument of `IOCTL_BENCH`: a benchmark loop run entirely in the kernel
/// on this fd's connection.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bench {
    /// `BENCH_SEND`, `_WRITE`, `_READ`, `_CAS` or `_FADD`.
    pub op: u32,
    /// `BENCH_LAT`, `BENCH_BW`, `BENCH_PINGPONG`, or for the other end
    /// `BENCH_RESPOND` / `BENCH_SINK`.
    pub mode: u32,
    /// Bytes per operation (1 to `MAX_MSG_SIZE`; 8 for atomics).
    pub size: u32,
    /// Operations, 1 to [`BENCH_MAX_ITERS`].
    pub iters: u32,
    /// Bandwidth: operations in flight, 1 to [`BENCH_MAX_DEPTH`].
    pub depth: u32,
    /// Milliseconds to wait for any one event: the completion of a posted
    /// operation (0: until the transport's verdict, as `Rdma::timeout_ms`)
    /// and the peer's next message or WRITE (0: `DEFAULT_TIMEOUT_MS`).
    pub timeout_ms: u32,
    /// One-sided operations: the peer's window.
    pub remote_addr: u64,
    /// One-sided operations: the peer's key.
    pub rkey: u32,
    /// WRITE ping-pong: this fd's window (from `IOCTL_EXPOSE`) the peer
    /// WRITEs into, at least `size` bytes; zero otherwise.
    pub window: u32,
    /// Latency: user pointer to `u64[iters]`, filled with each operation's
    /// time in nanoseconds (SEND: half the round trip). Bandwidth: user
    /// pointer to `u64[2 * iters]`, filled with each message's post time,
    /// in the order posted, then each completion's time, in the order
    /// completed, in nanoseconds from the first post: perftest's
    /// `tposted` and `tcompleted`, from which its BW peak is computed. 0
    /// for none.
    pub samples: u64,
    /// Output: nanoseconds from the first post to the last completion
    /// (bandwidth: from after the buffers' setup).
    pub total_ns: u64,
    /// Output: bytes moved.
    pub bytes: u64,
    /// Output, bandwidth: the shortest time in which `depth` consecutive
    /// operations completed (the peak rate is `depth * size / best_ns`).
    pub best_ns: u64,
}
