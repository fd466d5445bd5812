// SPDX-License-Identifier: GPL-2.0

//! The userspace RDMA end: librdmacm's synchronous endpoint API
//! (`rdma_create_ep`, `rdma_get_request`, `rdma_connect`, `rdma_accept`) and
//! libibverbs, through rdma-sys.
//!
//! It speaks the module's message protocol (`abi::WireHdr`, credits, see
//! `Documentation/flow-control.rst`) with the same constants, so a kernel fd
//! and this peer can be either end of a connection.

use crate::abi::{self, WireHdr};
use crate::scenario::{Endpoint, WindowOwner};
use anyhow::{bail, Context, Result};
use rdma_sys::*;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::CString;
use std::io;
use std::ptr::null_mut;
use std::time::{Duration, Instant};

// The peer keeps the most receives, each as large as a raw connection's
// (which fits a message connection's too), and says so in its setup data.
const RECV_DEPTH: usize = abi::RECV_DEPTH as usize;
const RECV_BUF: usize = abi::RECV_BUF_SIZE as usize;
const HDR: usize = abi::WIRE_HDR_SIZE as usize;
/// Slots of the send region, a receive buffer each: `send_wire` may use
/// all but the last, which is the credit message's.
const SEND_SLOTS: usize = RECV_DEPTH;
const CREDIT_SLOT: usize = SEND_SLOTS - 1;
/// How long a wait for the peer (a message, credits, a completion) lasts,
/// in ms: the command line's `--msg-timeout-ms` (20 s unless told).
static TIMEOUT_MS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(20_000);

/// Sets how long every userspace peer waits for its peer.
pub fn set_timeout_ms(ms: u32) {
    TIMEOUT_MS.store(ms, std::sync::atomic::Ordering::Relaxed);
}

// wr_id: kind in the high 32 bits, index in the low ones.
const WR_RECV: u64 = 1 << 32;
const WR_SEND: u64 = 2 << 32;
const WR_OP: u64 = 3 << 32;

/// Whether the channel of the synchronous id `id` has an event, waiting up
/// to `timeout_ms` (0: just look). A synchronous id (no channel given to
/// `rdma_create_ep` or `rdma_get_request`) has a channel of its own; an id
/// without one never has an event here.
///
/// # Safety
///
/// `id` is a valid `rdma_cm_id` for the duration of the call.
unsafe fn channel_ready(id: *mut rdma_cm_id, timeout_ms: u32) -> io::Result<bool> {
    // SAFETY: `id` is valid (the caller's contract).
    let channel = unsafe { (*id).channel };
    if channel.is_null() {
        return Ok(false);
    }
    let mut p = libc::pollfd {
        // SAFETY: `channel` is the id's, valid while it lives.
        fd: unsafe { (*channel).fd },
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = i32::try_from(timeout_ms).unwrap_or(i32::MAX);
    // SAFETY: `p` is one valid pollfd.
    match unsafe { libc::poll(&mut p, 1, ms) } {
        n if n < 0 => Err(io::Error::last_os_error()),
        n => Ok(n > 0),
    }
}

/// The errno of the call `what` just failed with, kept as the error's
/// source so that callers can tell it (`{:#}` prints "what: message").
fn os_err(what: &str) -> anyhow::Error {
    anyhow::Error::new(io::Error::last_os_error()).context(what.to_string())
}

/// A buffer registered with the device.
struct Region {
    /// The memory; its heap block never moves while registered.
    buf: RefCell<Vec<u8>>,
    mr: *mut ibv_mr,
}

impl Region {
    fn new(pd: *mut ibv_pd, len: usize, access: u32) -> Result<Self> {
        let mut buf = vec![0u8; len.max(1)];
        // SAFETY: `buf` is `len` writable bytes that live as long as the MR
        // (both are in `Region`, and `drop` deregisters first).
        let mr = unsafe { ibv_reg_mr(pd, buf.as_mut_ptr().cast(), buf.len(), access as i32) };
        if mr.is_null() {
            return Err(os_err("ibv_reg_mr"));
        }
        Ok(Self {
            buf: RefCell::new(buf),
            mr,
        })
    }

    fn addr(&self, off: usize) -> u64 {
        self.buf.borrow().as_ptr() as u64 + off as u64
    }

    fn lkey(&self) -> u32 {
        // SAFETY: the MR is valid while `self` lives.
        unsafe { (*self.mr).lkey }
    }

    fn rkey(&self) -> u32 {
        // SAFETY: as above.
        unsafe { (*self.mr).rkey }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: registered in `new`, deregistered once.
        unsafe { ibv_dereg_mr(self.mr) };
    }
}

/// Message-protocol and completion state.
#[derive(Default)]
struct State {
    credits: u32,
    pending_grant: u32,
    peer_low: bool,
    /// Received messages (inline, or announces): (receive slot, length,
    /// header), each checked by `wire`; on a raw connection every received
    /// buffer, with a default header.
    rx: VecDeque<(usize, usize, WireHdr)>,
    /// A raw connection (`connect_raw`): no header, no credits.
    raw: bool,
    /// The peer's message stream as checked so far.
    wire: abi::WireRx,
    /// The peer's receive depth, from its setup data.
    peer_depth: u32,
    /// The peer READs announces (its setup data).
    peer_reads: bool,
    /// The peer's announced messages this side READ and owes DONE for,
    /// one per credit message.
    done_owed: u32,
    /// A credit message (its slot is `CREDIT_SLOT`) is in flight.
    credit_inflight: bool,
    sends_inflight: u32,
    ops_inflight: u32,
    /// The first failure of a send or receive: (errno, what).
    error: Option<(i32, String)>,
    op_error: Option<i32>,
}

/// One connected endpoint.
pub struct UPeer {
    id: *mut rdma_cm_id,
    recv: Region,
    send: Region,
    op: Region,
    st: RefCell<State>,
    /// The region of this side's announced message, registered for the
    /// peer to READ, until its DONE.
    out: RefCell<Option<Region>>,
    /// Windows exposed by this peer: id is the index.
    windows: RefCell<Vec<Option<Region>>>,
    /// `disconnect` was called: the drop does not disconnect again.
    disconnected: Cell<bool>,
    /// The peer's DISCONNECTED (or DEVICE_REMOVAL) was taken.
    peer_gone: Cell<bool>,
}

fn qp_attr() -> ibv_qp_init_attr {
    // SAFETY: zero is a valid `ibv_qp_init_attr`.
    let mut a: ibv_qp_init_attr = unsafe { std::mem::zeroed() };
    a.cap.max_send_wr = 2 * abi::RECV_DEPTH;
    a.cap.max_recv_wr = abi::RECV_DEPTH;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    a.qp_type = ibv_qp_type::IBV_QPT_RC;
    a
}

/// `id`'s device is an iWARP device.
fn is_iwarp(id: *mut rdma_cm_id) -> bool {
    // SAFETY: `id` is bound to a device (it has a QP, or is an accepted
    // request); its context is librdmacm's.
    unsafe { (*(*(*id).verbs).device).transport_type == ibv_transport_type::IBV_TRANSPORT_IWARP }
}

/// `rdma_getaddrinfo()` of `addr` (TCP port space); the caller frees it
/// (`rdma_freeaddrinfo`).
pub fn getaddrinfo(addr: &abi::Addr, passive: bool) -> Result<*mut rdma_addrinfo> {
    let ip = match addr.family {
        abi::AF_INET => {
            std::net::IpAddr::from([addr.addr[0], addr.addr[1], addr.addr[2], addr.addr[3]])
        }
        _ => std::net::IpAddr::from(addr.addr),
    };
    let host = CString::new(ip.to_string())?;
    let port = CString::new(addr.port.to_string())?;
    // SAFETY: zero is a valid `rdma_addrinfo` hint.
    let mut hints: rdma_addrinfo = unsafe { std::mem::zeroed() };
    hints.ai_port_space = rdma_port_space::RDMA_PS_TCP as i32;
    if passive {
        hints.ai_flags = RAI_PASSIVE as i32;
    }
    let mut res = null_mut();
    // SAFETY: the strings and hints are valid for the call.
    if unsafe { rdma_getaddrinfo(host.as_ptr(), port.as_ptr(), &hints, &mut res) } != 0 {
        return Err(os_err("rdma_getaddrinfo"));
    }
    Ok(res)
}

/// A synchronous endpoint for `addr` with its QP: passive to listen on it,
/// active to connect to it.
fn create_ep(addr: &abi::Addr, passive: bool) -> Result<*mut rdma_cm_id> {
    let res = getaddrinfo(addr, passive)?;
    let mut id = null_mut();
    let mut attr = qp_attr();
    // SAFETY: `res` came from `rdma_getaddrinfo`; freed right after.
    let ret = unsafe { rdma_create_ep(&mut id, res, null_mut(), &mut attr) };
    // SAFETY: as above.
    unsafe { rdma_freeaddrinfo(res) };
    if ret != 0 {
        return Err(os_err("rdma_create_ep"));
    }
    Ok(id)
}

/// This side's setup data (`abi::SetupData`): it keeps the most receives
/// and READs announces.
const SETUP: [u8; abi::SETUP_DATA_SIZE] = abi::SetupData {
    recv_depth: abi::RECV_DEPTH,
    reads: true,
}
.encode();

/// The parameters to connect or accept with, `setup` (at most 56 bytes)
/// as private data; they point at it.
fn conn_param(resp: u32, init: u32, setup: &[u8]) -> rdma_conn_param {
    // SAFETY: zero is a valid `rdma_conn_param`.
    let mut p: rdma_conn_param = unsafe { std::mem::zeroed() };
    p.responder_resources = resp.min(255) as u8;
    p.initiator_depth = init.min(255) as u8;
    p.retry_count = 7;
    p.rnr_retry_count = 7;
    p.private_data = setup.as_ptr().cast();
    p.private_data_len = setup.len().min(56) as u8;
    p
}

/// The peer's setup data from the private data of the event a synchronous
/// `id` holds (its connect request, or the reply its `rdma_connect` got):
/// `abi::SetupData::FOREIGN` if it sent none, `EPROTO` if it is bad.
///
/// # Safety
///
/// `id` is a valid synchronous `rdma_cm_id`.
unsafe fn peer_setup(id: *mut rdma_cm_id) -> Result<abi::SetupData> {
    // SAFETY: `id` is valid (the caller's contract); its event, if any, is
    // the last one it took, and lives until the next.
    let ev = unsafe { (*id).event };
    let data: &[u8] = if ev.is_null() {
        &[]
    } else {
        // SAFETY: a connection event's `private_data` is null or has
        // `private_data_len` bytes, valid while the event is held.
        unsafe {
            let c = (*ev).param.conn;
            if c.private_data.is_null() {
                &[]
            } else {
                std::slice::from_raw_parts(c.private_data.cast(), usize::from(c.private_data_len))
            }
        }
    };
    abi::SetupData::of_peer(data)
        .map_err(|_| io::Error::from_raw_os_error(libc::EPROTO))
        .context("bad setup data")
}

/// The device's `max_qp_rd_atom` and `max_qp_init_rd_atom`.
fn device_limits(id: *mut rdma_cm_id) -> Result<(u32, u32)> {
    // SAFETY: zero is a valid `ibv_device_attr`; `id` is bound to a device.
    let mut attr: ibv_device_attr = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { ibv_query_device((*id).verbs, &mut attr) } != 0 {
        return Err(os_err("ibv_query_device"));
    }
    Ok((
        attr.max_qp_rd_atom.max(0) as u32,
        attr.max_qp_init_rd_atom.max(0) as u32,
    ))
}

/// As the module: 0 asks for the device's maximum, more is clamped to it.
fn clamp_depth(asked: u32, dev_max: u32) -> u32 {
    let max = dev_max.min(255);
    if asked == 0 {
        max
    } else {
        asked.min(max)
    }
}

/// A listening endpoint that hands out connections.
pub struct Listener {
    id: *mut rdma_cm_id,
}

impl Listener {
    /// Listens on `addr`.
    pub fn bind(addr: &abi::Addr) -> Result<Self> {
        let l = Self {
            id: create_ep(addr, true)?,
        };
        // SAFETY: `id` is a passive endpoint.
        if unsafe { rdma_listen(l.id, 8) } != 0 {
            return Err(os_err("rdma_listen"));
        }
        Ok(l)
    }

    /// Waits at most `timeout_ms` for the next connection request (0:
    /// without limit; `ETIMEDOUT` when none came), sets it up and accepts
    /// it, serving at most `resp` READs/atomics and issuing at most `init`
    /// (0: the device's maximum), and no more than the peer asked for: the
    /// module's rules.
    pub fn accept_within(&self, resp: u32, init: u32, timeout_ms: u32) -> Result<UPeer> {
        self.accept_with(resp, init, timeout_ms, &SETUP)
    }

    /// [`Self::accept_within`], replying with `setup` as private data
    /// (the hostile peer's bad setup data).
    pub fn accept_with(
        &self,
        resp: u32,
        init: u32,
        timeout_ms: u32,
        setup: &[u8],
    ) -> Result<UPeer> {
        // SAFETY: the listener is valid while `self` lives.
        if timeout_ms > 0 && !unsafe { channel_ready(self.id, timeout_ms) }.context("poll")? {
            return Err(io::Error::from_raw_os_error(libc::ETIMEDOUT))
                .with_context(|| format!("no connection request in {timeout_ms} ms"));
        }
        let mut id = null_mut();
        // SAFETY: the listener is valid; `id` receives the new endpoint.
        if unsafe { rdma_get_request(self.id, &mut id) } != 0 {
            return Err(os_err("rdma_get_request"));
        }
        // SAFETY: a synchronous id keeps its connection request event; its
        // `param.conn` holds what the peer asked, seen from this side.
        let (asked_resp, asked_init) = unsafe {
            let ev = (*id).event;
            if ev.is_null() {
                (0, 0)
            } else {
                let c = (*ev).param.conn;
                (
                    u32::from(c.responder_resources),
                    u32::from(c.initiator_depth),
                )
            }
        };
        let (max_resp, max_init) = device_limits(id)?;
        let resp = clamp_depth(resp, max_resp).min(asked_resp);
        let init = clamp_depth(init, max_init).min(asked_init);
        println!("negotiated resp={resp} init={init} (peer asked {asked_resp}/{asked_init})");
        // SAFETY: `id` is the request's synchronous id, its event still held
        // (`rdma_accept` takes the next).
        let depth = match unsafe { peer_setup(id) } {
            Ok(d) => d,
            Err(e) => {
                // SAFETY: `id` is the request's; rejected, then destroyed.
                unsafe {
                    rdma_reject(id, null_mut(), 0);
                    rdma_destroy_ep(id);
                }
                return Err(e);
            }
        };
        let peer = UPeer::setup(id)?;
        peer.learn_peer(depth);
        let mut p = conn_param(resp, init, setup);
        // SAFETY: the endpoint has its QP and its receives posted.
        if unsafe { rdma_accept(peer.id, &mut p) } != 0 {
            let e = os_err("rdma_accept");
            // Never connected (see `connect_with`).
            peer.disconnected.set(true);
            return Err(e);
        }
        Ok(peer)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // SAFETY: created in `bind`, destroyed once.
        unsafe { rdma_destroy_ep(self.id) };
    }
}

impl UPeer {
    /// Connects to `addr`.
    pub fn connect(addr: &abi::Addr, resp: u32, init: u32) -> Result<Self> {
        Self::connect_with(addr, resp, init, &SETUP)
    }

    /// [`Self::connect`], with `setup` as the request's private data (the
    /// hostile peer's bad setup data).
    pub fn connect_with(addr: &abi::Addr, resp: u32, init: u32, setup: &[u8]) -> Result<Self> {
        let id = create_ep(addr, false)?;
        let (max_resp, max_init) = device_limits(id)?;
        let peer = Self::setup(id)?;
        let mut p = conn_param(
            clamp_depth(resp, max_resp),
            clamp_depth(init, max_init),
            setup,
        );
        // SAFETY: the endpoint has its QP and its receives posted.
        if unsafe { rdma_connect(peer.id, &mut p) } != 0 {
            let e = os_err("rdma_connect");
            // Never connected: a synchronous rdma_disconnect() would wait
            // for a DISCONNECTED that never comes.
            peer.disconnected.set(true);
            return Err(e);
        }
        // SAFETY: a synchronous id holds the reply's ESTABLISHED event.
        let depth = unsafe { peer_setup(peer.id) }?;
        peer.learn_peer(depth);
        Ok(peer)
    }

    /// The peer's setup data: its depth is the credits this side starts
    /// with, and the most a grant may bring it to.
    fn learn_peer(&self, peer: abi::SetupData) {
        let mut st = self.st.borrow_mut();
        st.peer_depth = peer.recv_depth;
        st.peer_reads = peer.reads;
        st.credits = peer.recv_depth;
        st.wire.set_peer_depth(peer.recv_depth);
    }

    fn setup(id: *mut rdma_cm_id) -> Result<Self> {
        // SAFETY: `id` is a valid endpoint with a PD (librdmacm's).
        let pd = unsafe { (*id).pd };
        let local = ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0;
        // An iWARP READ lands through the sink's key: the region READs land
        // in needs remote write access there (as rping and perftest give it).
        let op_access = if is_iwarp(id) {
            local | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE.0
        } else {
            local
        };
        let peer = Self {
            id,
            recv: Region::new(pd, RECV_DEPTH * RECV_BUF, local)?,
            send: Region::new(pd, SEND_SLOTS * RECV_BUF, local)?,
            op: Region::new(pd, abi::MAX_MSG_SIZE as usize, op_access)?,
            st: RefCell::new(State {
                wire: abi::WireRx::new(abi::RECV_DEPTH, true),
                ..State::default()
            }),
            out: RefCell::new(None),
            windows: RefCell::new(Vec::new()),
            disconnected: Cell::new(false),
            peer_gone: Cell::new(false),
        };
        for slot in 0..RECV_DEPTH {
            peer.post_recv(slot)?;
        }
        Ok(peer)
    }

    fn post_recv(&self, slot: usize) -> Result<()> {
        let mut sge = ibv_sge {
            addr: self.recv.addr(slot * RECV_BUF),
            length: RECV_BUF as u32,
            lkey: self.recv.lkey(),
        };
        // SAFETY: zero is a valid `ibv_recv_wr`.
        let mut wr: ibv_recv_wr = unsafe { std::mem::zeroed() };
        wr.wr_id = WR_RECV | slot as u64;
        wr.sg_list = &mut sge;
        wr.num_sge = 1;
        let mut bad = null_mut();
        // SAFETY: the QP is valid; the buffer is registered and owned by us.
        if unsafe { ibv_post_recv((*self.id).qp, &mut wr, &mut bad) } != 0 {
            return Err(os_err("ibv_post_recv"));
        }
        Ok(())
    }

    /// Posts a send-queue request on `region[off..off+len]`.
    #[allow(clippy::too_many_arguments)]
    fn post(
        &self,
        kind: u64,
        opcode: u32,
        region: &Region,
        off: usize,
        len: usize,
        remote: Option<(u64, u32)>,
        atomic: Option<(u64, u64)>,
    ) -> io::Result<()> {
        let mut sge = ibv_sge {
            addr: region.addr(off),
            length: len as u32,
            lkey: region.lkey(),
        };
        // SAFETY: zero is a valid `ibv_send_wr`.
        let mut wr: ibv_send_wr = unsafe { std::mem::zeroed() };
        wr.wr_id = kind;
        wr.sg_list = &mut sge;
        wr.num_sge = 1;
        wr.opcode = opcode;
        wr.send_flags = ibv_send_flags::IBV_SEND_SIGNALED.0;
        match (remote, atomic) {
            (Some((addr, rkey)), Some((compare_add, swap))) => {
                wr.wr.atomic = atomic_t {
                    remote_addr: addr,
                    compare_add,
                    swap,
                    rkey,
                }
            }
            (Some((addr, rkey)), None) => {
                wr.wr.rdma = rdma_t {
                    remote_addr: addr,
                    rkey,
                }
            }
            _ => {}
        }
        let mut bad = null_mut();
        // SAFETY: the QP is valid; the buffer is registered and owned by us.
        let ret = unsafe { ibv_post_send((*self.id).qp, &mut wr, &mut bad) };
        if ret != 0 {
            return Err(io::Error::from_raw_os_error(ret));
        }
        Ok(())
    }

    /// Polls both CQs once; returns whether anything completed.
    fn poll(&self) -> Result<bool> {
        let mut any = false;
        // SAFETY: the endpoint's CQs are valid.
        let cqs = unsafe { [(*self.id).recv_cq, (*self.id).send_cq] };
        for cq in cqs {
            loop {
                // SAFETY: zero is a valid `ibv_wc`; `cq` is valid.
                let mut wc: ibv_wc = unsafe { std::mem::zeroed() };
                // SAFETY: as above.
                let n = unsafe { ibv_poll_cq(cq, 1, &mut wc) };
                if n < 0 {
                    bail!("ibv_poll_cq failed");
                }
                if n == 0 {
                    break;
                }
                any = true;
                self.complete(&wc)?;
            }
        }
        Ok(any)
    }

    fn complete(&self, wc: &ibv_wc) -> Result<()> {
        let ok = wc.status == ibv_wc_status::IBV_WC_SUCCESS;
        let kind = wc.wr_id & !0xffff_ffff;
        let idx = (wc.wr_id & 0xffff_ffff) as usize;
        let mut st = self.st.borrow_mut();
        match kind {
            WR_RECV => {
                if !ok {
                    st.error.get_or_insert((
                        wc_errno(wc.status),
                        format!("receive failed, status {}", wc.status),
                    ));
                    return Ok(());
                }
                if st.error.is_some() {
                    return Ok(()); // Nothing more is read after a failure.
                }
                let len = (wc.byte_len as usize).min(RECV_BUF);
                if st.raw {
                    st.rx.push_back((idx, len, WireHdr::default()));
                    return Ok(());
                }
                let credits = st.credits;
                let checked = st.wire.check(
                    &self.recv.buf.borrow()[idx * RECV_BUF..idx * RECV_BUF + len],
                    credits,
                );
                let hdr = match checked {
                    Ok((hdr, credits)) => {
                        st.credits = credits;
                        hdr
                    }
                    Err(fault) => {
                        st.error.get_or_insert((
                            libc::EPROTO,
                            format!("peer broke the message protocol: {}", fault.as_str()),
                        ));
                        return Ok(());
                    }
                };
                st.peer_low = hdr.flags & abi::WIRE_LOW != 0;
                if hdr.flags & abi::WIRE_DONE != 0 {
                    // The peer READ this side's announced message: its
                    // region goes, and its key with it.
                    self.out.borrow_mut().take();
                }
                if hdr.flags & abi::WIRE_CREDIT != 0 {
                    drop(st);
                    self.post_recv(idx)?;
                    self.st.borrow_mut().pending_grant += 1;
                } else {
                    st.rx.push_back((idx, len, hdr));
                }
            }
            WR_SEND => {
                st.sends_inflight -= 1;
                if idx == CREDIT_SLOT {
                    st.credit_inflight = false;
                }
                if !ok {
                    st.error.get_or_insert((
                        wc_errno(wc.status),
                        format!("send failed, status {}", wc.status),
                    ));
                }
            }
            _ => {
                st.ops_inflight -= 1;
                if !ok && st.op_error.is_none() {
                    st.op_error = Some(wc_errno(wc.status));
                }
            }
        }
        Ok(())
    }

    /// Polls until `done` holds or the time is up.
    fn wait(&self, what: &str, mut done: impl FnMut(&State) -> bool) -> Result<()> {
        let ms = TIMEOUT_MS.load(std::sync::atomic::Ordering::Relaxed);
        let end = Instant::now() + Duration::from_millis(u64::from(ms));
        loop {
            if done(&self.st.borrow()) {
                return Ok(());
            }
            if let Some((errno, e)) = &self.st.borrow().error {
                let err = io::Error::from_raw_os_error(*errno);
                return Err(anyhow::Error::new(err).context(format!("{what}: {e}")));
            }
            if !self.poll()? {
                self.check_disconnected();
                if Instant::now() > end {
                    bail!("{what}: timed out");
                }
                std::thread::sleep(Duration::from_micros(20));
            }
        }
    }

    /// Takes a DISCONNECTED (or DEVICE_REMOVAL) event off the id's own
    /// channel, if one is there, and answers it as the module does: the QP
    /// goes to the error state, so what was posted and will never be
    /// acknowledged completes now, flushed. rdma_cm leaves the QP as it is,
    /// and rxe retries a request with retry count 7 for ever: a last echo
    /// whose ACK was lost on a lossy link, with the pinger gone, was waited
    /// for until the message timeout (the two-host suite's
    /// lossy_link_delivers, 300 s, over its 180 s bound).
    fn check_disconnected(&self) {
        if self.disconnected.get() {
            return;
        }
        // SAFETY: the endpoint is valid while `self` lives.
        if !matches!(unsafe { channel_ready(self.id, 0) }, Ok(true)) {
            return;
        }
        // SAFETY: the id is synchronous (`channel_ready` found its channel).
        let channel = unsafe { (*self.id).channel };
        let mut ev = null_mut();
        // SAFETY: the channel has an event (poll said so); `ev` receives it.
        if unsafe { rdma_get_cm_event(channel, &mut ev) } != 0 {
            return;
        }
        // SAFETY: `ev` is the event just taken, acknowledged once below.
        let kind = unsafe { (*ev).event };
        // SAFETY: as above.
        unsafe { rdma_ack_cm_event(ev) };
        if kind == rdma_cm_event_type::RDMA_CM_EVENT_DISCONNECTED
            || kind == rdma_cm_event_type::RDMA_CM_EVENT_DEVICE_REMOVAL
        {
            // The event is taken: a synchronous rdma_disconnect() would now
            // wait for it for ever, so neither `disconnect` nor `drop` calls
            // it. Destroying the id answers the peer's DREQ.
            self.disconnected.set(true);
            self.peer_gone.set(true);
            // SAFETY: zero is a valid `ibv_qp_attr`.
            let mut attr: ibv_qp_attr = unsafe { std::mem::zeroed() };
            attr.qp_state = ibv_qp_state::IBV_QPS_ERR;
            // SAFETY: the connected endpoint has a QP; `attr` lives for the
            // call. A failure leaves the waits to their timeouts, as before.
            unsafe {
                ibv_modify_qp(
                    (*self.id).qp,
                    &mut attr,
                    ibv_qp_attr_mask::IBV_QP_STATE.0 as i32,
                )
            };
        }
    }

    /// Sends the credits back when the peer needs them, and the DONE this
    /// side owes.
    fn maybe_send_credits(&self) -> Result<()> {
        let (grant, low, done) = {
            let mut st = self.st.borrow_mut();
            let grants_due = st.pending_grant > 0
                && (st.peer_low || st.pending_grant >= abi::grant_batch(abi::RECV_DEPTH));
            let due = !st.raw
                && (grants_due || st.done_owed > 0)
                && st.credits >= 1
                && !st.credit_inflight
                && st.error.is_none();
            if !due {
                return Ok(());
            }
            st.credits -= 1;
            st.peer_low = false;
            st.sends_inflight += 1;
            st.credit_inflight = true;
            let done = st.done_owed > 0;
            if done {
                st.done_owed -= 1;
                st.wire.done_sent();
            }
            (std::mem::take(&mut st.pending_grant), st.credits < 2, done)
        };
        let hdr = WireHdr::credit(grant, low, done);
        let off = CREDIT_SLOT * RECV_BUF;
        // No request uses this slot: no credit message is in flight.
        self.send.buf.borrow_mut()[off..off + HDR].copy_from_slice(&hdr.encode());
        self.post(
            WR_SEND | CREDIT_SLOT as u64,
            ibv_wr_opcode::IBV_WR_SEND,
            &self.send,
            off,
            HDR,
            None,
            None,
        )
        .context("send credits")?;
        // Not waited for: its completion is reaped by whatever waits next.
        // A receive whose peer closed right after its last message must not
        // fail on the credits it returns.
        Ok(())
    }
}

/// What a hostile peer (`rdma-krust hostile`) and a raw client
/// (`rdma-krust raw-ping`) need: SENDs and receives of any bytes, outside
/// the protocol and its credits.
impl UPeer {
    /// Connects to `addr` for raw messages: every SEND is the caller's
    /// bytes, every receive one buffer of the other side's (`recv_wire`);
    /// the receives this side posted stay its only flow control.
    pub fn connect_raw(addr: &abi::Addr) -> Result<Self> {
        let peer = Self::connect(addr, 0, 0)?;
        // Nothing was received yet: completions are reaped only by waits.
        peer.st.borrow_mut().raw = true;
        Ok(peer)
    }

    /// On a raw connection, waits for the next received buffer and copies
    /// it into `buf`; returns its length. The receive is posted again.
    pub fn recv_wire(&self, buf: &mut [u8]) -> Result<usize> {
        if !self.st.borrow().raw {
            bail!("recv_wire: not a raw connection");
        }
        self.wait("receive", |st| !st.rx.is_empty())?;
        let (slot, len, _) = self.st.borrow_mut().rx.pop_front().context("no receive")?;
        let Some(dst) = buf.get_mut(..len) else {
            bail!("a message of {len} bytes does not fit in {}", buf.len());
        };
        dst.copy_from_slice(&self.recv.buf.borrow()[slot * RECV_BUF..slot * RECV_BUF + len]);
        self.post_recv(slot)?;
        Ok(len)
    }

    /// The connection runs over iWARP, where the side that connected must
    /// send first (MPA, RFC 5044): a responder's first FPDU that reaches the
    /// initiator before it has taken in the MPA reply fails the initiator's
    /// connect (siw: `RDMA_CM_EVENT_CONNECT_ERROR`).
    pub fn iwarp(&self) -> bool {
        is_iwarp(self.id)
    }

    /// Posts one SEND for each of `sends`, exactly those bytes (each at most
    /// a receive buffer, fewer than `SEND_SLOTS` of them), and waits until
    /// all completed. Credits are neither spent nor checked: the caller keeps
    /// within the receives the other side posted.
    pub fn send_wire(&self, sends: &[Vec<u8>]) -> Result<()> {
        if sends.len() >= SEND_SLOTS || sends.iter().any(|b| b.len() > RECV_BUF) {
            bail!("send_wire: {} SENDs, too many or too large", sends.len());
        }
        self.wait("earlier sends", |st| st.sends_inflight == 0)?;
        for (i, bytes) in sends.iter().enumerate() {
            let off = i * RECV_BUF;
            self.send.buf.borrow_mut()[off..off + bytes.len()].copy_from_slice(bytes);
            self.st.borrow_mut().sends_inflight += 1;
            self.post(
                WR_SEND,
                ibv_wr_opcode::IBV_WR_SEND,
                &self.send,
                off,
                bytes.len(),
                None,
                None,
            )
            .context("ibv_post_send")?;
        }
        self.wait("send", |st| st.sends_inflight == 0)
    }

    /// An announce goes out through `send_wire`: the other side's DONE is
    /// due, not a fault.
    pub fn announced(&self) {
        self.st.borrow_mut().wire.announce_sent();
    }

    /// Waits up to `ms` for the other side to end the connection (its
    /// DISCONNECTED, taken and answered as `check_disconnected` does), on an
    /// endpoint that has not disconnected itself: a peer that breaks the
    /// module's protocol must learn that its connection is gone.
    pub fn wait_peer_gone(&self, ms: u32) -> Result<()> {
        let end = Instant::now() + Duration::from_millis(u64::from(ms));
        while !self.peer_gone.get() {
            if self.disconnected.get() {
                bail!("this side disconnected: the peer's end cannot be told apart");
            }
            if Instant::now() > end {
                bail!("the other side did not disconnect within {ms} ms");
            }
            self.check_disconnected();
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    /// `rdma_disconnect()`: the other side sees the connection end now.
    /// Nothing to do once the peer's disconnect was taken (see
    /// `check_disconnected`).
    pub fn disconnect(&self) -> Result<()> {
        if self.disconnected.get() {
            return Ok(());
        }
        self.linger();
        self.disconnected.set(true);
        // SAFETY: the endpoint is valid and connected.
        if unsafe { rdma_disconnect(self.id) } != 0 {
            return Err(os_err("rdma_disconnect"));
        }
        Ok(())
    }
}

impl Endpoint for UPeer {
    fn send_msg(&self, data: &[u8]) -> Result<()> {
        let len = data.len();
        let announce = len > abi::MAX_INLINE_MSG as usize;
        if len as u64 > abi::MAX_MSG_SIZE || (announce && !self.st.borrow().peer_reads) {
            return Err(io::Error::from_raw_os_error(libc::EMSGSIZE))
                .with_context(|| format!("message of {len} bytes"));
        }
        self.maybe_send_credits()?;
        // A credit, and for an announce the peer's DONE of the one before
        // (one out at a time: fewer than the window allows, and one region
        // to keep); no send in flight, so slot 0 of the send region is
        // ours.
        self.wait("credits", |st| {
            st.credits > 1 && !(announce && st.wire.awaiting_done()) && st.sends_inflight == 0
        })?;
        let (grant, low) = {
            let mut st = self.st.borrow_mut();
            st.credits -= 1;
            st.peer_low = false;
            st.sends_inflight += 1;
            (std::mem::take(&mut st.pending_grant), st.credits < 2)
        };
        let hdr = WireHdr::message(len as u32, grant, low);
        let mut wire_len = HDR;
        {
            let mut b = self.send.buf.borrow_mut();
            b[..HDR].copy_from_slice(&hdr.encode());
            if announce {
                // A fresh registration, READ access only, for this message.
                // SAFETY: the endpoint's PD is valid.
                let pd = unsafe { (*self.id).pd };
                let r = Region::new(pd, len, ibv_access_flags::IBV_ACCESS_REMOTE_READ.0)?;
                r.buf.borrow_mut()[..len].copy_from_slice(data);
                let mut off = 0;
                for seg in abi::ReadSeg::lens(len as u32) {
                    let s = abi::ReadSeg {
                        addr: r.addr(off),
                        rkey: r.rkey(),
                        len: seg,
                    };
                    b[wire_len..wire_len + s.encode().len()].copy_from_slice(&s.encode());
                    wire_len += s.encode().len();
                    off += seg as usize;
                }
                self.st.borrow_mut().wire.announce_sent();
                *self.out.borrow_mut() = Some(r);
            } else {
                b[HDR..HDR + len].copy_from_slice(data);
                wire_len += len;
            }
        }
        self.post(
            WR_SEND,
            ibv_wr_opcode::IBV_WR_SEND,
            &self.send,
            0,
            wire_len,
            None,
            None,
        )
        .context("ibv_post_send")?;
        self.wait("send", |st| st.sends_inflight == 0)
    }

    fn recv_msg(&self, buf: &mut [u8]) -> Result<usize> {
        self.maybe_send_credits()?;
        self.wait("receive", |st| !st.rx.is_empty())?;
        let (slot, len, hdr) = *self.st.borrow().rx.front().context("no message")?;
        let msg_len = hdr.msg_len as usize;
        if msg_len > buf.len() {
            bail!("message of {msg_len} bytes does not fit");
        }
        let at = slot * RECV_BUF;
        if hdr.flags & abi::WIRE_READ != 0 {
            // READ what the announce names into the op region, in order.
            let segs: Vec<abi::ReadSeg> =
                abi::ReadSeg::parse(&self.recv.buf.borrow()[at + HDR..at + len]).collect();
            let mut off = 0;
            self.st.borrow_mut().op_error = None;
            for s in &segs {
                self.st.borrow_mut().ops_inflight += 1;
                self.post(
                    WR_OP,
                    ibv_wr_opcode::IBV_WR_RDMA_READ,
                    &self.op,
                    off,
                    s.len as usize,
                    Some((s.addr, s.rkey)),
                    None,
                )?;
                off += s.len as usize;
            }
            self.wait("read", |st| st.ops_inflight == 0)?;
            if let Some(e) = self.st.borrow().op_error {
                // The peer named memory it does not expose.
                let e =
                    io::Error::from_raw_os_error(if e == libc::EACCES { libc::EPROTO } else { e });
                return Err(anyhow::Error::new(e).context("receive: READ of an announced message"));
            }
            buf[..msg_len].copy_from_slice(&self.op.buf.borrow()[..msg_len]);
            self.st.borrow_mut().done_owed += 1;
        } else {
            buf[..msg_len].copy_from_slice(&self.recv.buf.borrow()[at + HDR..at + HDR + msg_len]);
        }
        self.st.borrow_mut().rx.pop_front();
        self.post_recv(slot)?;
        self.st.borrow_mut().pending_grant += 1;
        // The message is ours; a failure to return credits shows on the
        // next call, as a broken connection.
        let _ = self.maybe_send_credits();
        Ok(msg_len)
    }

    fn rdma(&self, addr: u64, rkey: u32, data: &mut [u8], write: bool) -> io::Result<()> {
        let len = data.len();
        // No operation is in flight, so the op region is ours.
        if write {
            self.op.buf.borrow_mut()[..len].copy_from_slice(data);
        }
        let opcode = if write {
            ibv_wr_opcode::IBV_WR_RDMA_WRITE
        } else {
            ibv_wr_opcode::IBV_WR_RDMA_READ
        };
        self.st.borrow_mut().op_error = None;
        self.st.borrow_mut().ops_inflight += 1;
        self.post(WR_OP, opcode, &self.op, 0, len, Some((addr, rkey)), None)?;
        self.wait("rdma", |st| st.ops_inflight == 0)
            .map_err(io::Error::other)?;
        if let Some(e) = self.st.borrow().op_error {
            return Err(io::Error::from_raw_os_error(e));
        }
        if !write {
            data.copy_from_slice(&self.op.buf.borrow()[..len]);
        }
        Ok(())
    }

    fn atomic(
        &self,
        addr: u64,
        rkey: u32,
        op: u32,
        compare_add: u64,
        swap: u64,
    ) -> io::Result<u64> {
        if !addr.is_multiple_of(8) {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let opcode = match op {
            abi::ATOMIC_CMP_SWAP => ibv_wr_opcode::IBV_WR_ATOMIC_CMP_AND_SWP,
            _ => ibv_wr_opcode::IBV_WR_ATOMIC_FETCH_AND_ADD,
        };
        self.st.borrow_mut().op_error = None;
        self.st.borrow_mut().ops_inflight += 1;
        self.post(
            WR_OP,
            opcode,
            &self.op,
            0,
            8,
            Some((addr, rkey)),
            Some((compare_add, swap)),
        )?;
        self.wait("atomic", |st| st.ops_inflight == 0)
            .map_err(io::Error::other)?;
        if let Some(e) = self.st.borrow().op_error {
            return Err(io::Error::from_raw_os_error(e));
        }
        let mut v = [0u8; 8];
        v.copy_from_slice(&self.op.buf.borrow()[..8]);
        Ok(u64::from_ne_bytes(v))
    }
}

impl WindowOwner for UPeer {
    fn expose(&self, len: u64, access: u32) -> Result<(u64, u32, u32)> {
        let mut flags = ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0;
        if access & abi::ACCESS_READ != 0 {
            flags |= ibv_access_flags::IBV_ACCESS_REMOTE_READ.0;
        }
        if access & abi::ACCESS_WRITE != 0 {
            flags |= ibv_access_flags::IBV_ACCESS_REMOTE_WRITE.0;
        }
        if access & abi::ACCESS_ATOMIC != 0 {
            flags |= ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC.0;
        }
        // SAFETY: the endpoint's PD is valid.
        let r = Region::new(unsafe { (*self.id).pd }, len as usize, flags)?;
        let out = (r.addr(0), r.rkey());
        let mut w = self.windows.borrow_mut();
        w.push(Some(r));
        Ok((out.0, out.1, (w.len() - 1) as u32))
    }

    fn window_read(&self, id: u32, buf: &mut [u8]) -> Result<()> {
        let w = self.windows.borrow();
        let r = w
            .get(id as usize)
            .and_then(Option::as_ref)
            .context("no such window")?;
        buf.copy_from_slice(&r.buf.borrow()[..buf.len()]);
        Ok(())
    }

    fn window_write(&self, id: u32, data: &[u8]) -> Result<()> {
        let mut w = self.windows.borrow_mut();
        let r = w
            .get_mut(id as usize)
            .and_then(Option::as_mut)
            .context("no such window")?;
        r.buf.borrow_mut()[..data.len()].copy_from_slice(data);
        Ok(())
    }

    fn revoke(&self, id: u32) -> Result<()> {
        let mut w = self.windows.borrow_mut();
        // Deregistering the MR invalidates its rkey.
        w.get_mut(id as usize)
            .and_then(Option::take)
            .context("no such window")?;
        Ok(())
    }
}

/// The errno of a failed work completion, as the module maps it: access
/// errors are `EACCES`, a flush (the connection went away) `ECONNRESET`.
fn wc_errno(status: u32) -> i32 {
    match status {
        ibv_wc_status::IBV_WC_REM_ACCESS_ERR | ibv_wc_status::IBV_WC_LOC_PROT_ERR => libc::EACCES,
        ibv_wc_status::IBV_WC_WR_FLUSH_ERR => libc::ECONNRESET,
        _ => libc::EIO,
    }
}

impl UPeer {
    /// Before this side closes: waits for the peer to READ the message this
    /// side announced last (its DONE), up to the message timeout, as the
    /// module does: a message sent just before a close is still delivered.
    fn linger(&self) {
        if self.out.borrow().is_some() && !self.peer_gone.get() {
            let _ = self.wait("DONE", |_| self.out.borrow().is_none());
        }
    }
}

impl Drop for UPeer {
    fn drop(&mut self) {
        if !self.disconnected.get() {
            self.linger();
        }
        // SAFETY: the endpoint is valid; disconnecting first lets the peer
        // see the end; the regions are deregistered after the QP is gone.
        // Once only: a synchronous id's rdma_disconnect() waits for the
        // DISCONNECTED event, and on iWARP a second call is accepted and
        // then waits for an event that never comes.
        unsafe {
            if !self.disconnected.get() {
                rdma_disconnect(self.id);
            }
            rdma_destroy_ep(self.id);
        }
    }
}
