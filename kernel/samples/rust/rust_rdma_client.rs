// SPDX-License-Identifier: GPL-2.0

//! Rust RDMA sample: a client, the active side of the RDMA/CM.
//!
//! At load it connects twice to [`PEER`], 203.0.113.28: 6.12's `module!`
//! takes no parameters and `kernel::rdma` tells no device's IP address, so
//! the address is fixed, a documentation address (RFC 5737) that a test
//! gives a device of its own. Each step it verifies is logged on a line of
//! its own:
//!
//! - to port 7, the echo sample (`rust_rdma_echo`): it SENDs a message of
//!   [`MSG_LEN`] bytes and checks that the message it receives back holds
//!   the same bytes;
//! - to port [`OWN_PORT`], a passive side of its own, which accepts the
//!   connection with a queue pair in the client's protection domain. The
//!   echo sample exposes no memory, and a peer's key only works through a
//!   queue pair of the PD its region is in: this loopback pair, both ends
//!   in one PD, is the smallest peer whose memory an RDMA WRITE or READ may
//!   reach. The client registers two [`Region`]s of [`LEN`] bytes by fast
//!   registration, a target that peers may READ and WRITE, and a sink for
//!   READs (the sink of an iWARP READ is written by the peer's response, so
//!   it is registered for remote writes). It WRITEs a pattern into the
//!   target and READs the target back into the sink, after which the CPU
//!   finds the pattern in both (on iWARP a WRITE completes once sent, and
//!   only the READ behind it shows that it landed); the CPU then stores
//!   another pattern in the target, which a second READ brings to the
//!   sink.
//!
//! Every step runs from an event handler: the RDMA/CM's for the next step
//! of connecting, the completion handler for the next request. A connection
//! that fails or goes, or whose device goes, is dropped by the handler of
//! its own event; the regions, the PD and the CQ go with the last end of
//! the loopback pair.
//!
//! Built as a module, it can be unloaded with its connections up: its exit
//! drops the listener, then the connections, their queue pairs drained
//! first.

use kernel::prelude::*;
use kernel::{
    c_str, new_mutex,
    rdma::{
        cm::{CmEvent, CmEventKind, CmHandler, CmId, ConnParam, HandlerId, PortSpace, SockAddr},
        cq::{Cq, PollContext},
        dma::{DeviceBuf, Direction},
        mr::{Access, Region},
        pd::Pd,
        qp::{Qp, QpCaps, SendOp},
        wc::Wc,
        work::{CompletionHandler, SgeList, WorkCtx},
    },
    str::CStr,
    sync::{Arc, Mutex},
};

module! {
    type: RustRdmaClient,
    name: "rust_rdma_client",
    author: "Rust for Linux Contributors",
    description: "Rust RDMA client sample",
    license: "GPL",
}

/// The address the client connects to.
const PEER: [u8; 4] = [203, 0, 113, 28];
/// The echo sample's port.
const ECHO_PORT: u16 = 7;
/// The port of the client's own passive side.
const OWN_PORT: u16 = 7471;
/// Milliseconds for address and route resolution.
const RESOLVE_MS: u32 = 5000;
/// The bytes of the message the echo sample sends back.
const MSG_LEN: usize = 1024;
/// The bytes of each region: two pages, so that a registration maps more
/// than one.
const LEN: usize = 8192;
/// The patterns: the message, the WRITE's, the CPU's before the last READ.
const SEED_MSG: u8 = 7;
const SEED_WRITE: u8 = 0x5a;
const SEED_CPU: u8 = 0xc3;
const OWNER: &CStr = c_str!("rust_rdma_client");

/// Byte `i` of the pattern `seed`.
fn pattern(seed: u8, i: usize) -> u8 {
    (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8
}

/// `len` bytes of the pattern `seed`.
fn pattern_vec(seed: u8, len: usize) -> Result<KVec<u8>> {
    let mut v = KVec::with_capacity(len, GFP_KERNEL)?;
    for i in 0..len {
        v.push(pattern(seed, i), GFP_KERNEL)?;
    }
    Ok(v)
}

/// Whether `region` holds the pattern `seed` in all its bytes.
fn holds(region: &Region, seed: u8) -> Result<bool> {
    let mut chunk = [0u8; 256];
    for off in (0..region.len()).step_by(chunk.len()) {
        let n = chunk.len().min(region.len() - off);
        region.read(off, &mut chunk[..n])?;
        if chunk[..n]
            .iter()
            .enumerate()
            .any(|(i, b)| *b != pattern(seed, off + i))
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A queue pair's sizes: one receive, one SGE a request, `send_wr` sends.
/// The echo connection sends one message at a time, the loopback pair's
/// active end has the two registrations at most in flight (then one WRITE
/// or READ at a time), and its passive end posts nothing: its peer's WRITEs
/// and READs are served by the device.
fn caps(send_wr: u32) -> QpCaps {
    QpCaps {
        send_wr,
        recv_wr: 1,
        send_sge: 1,
        recv_sge: 1,
        max_inline: 0,
    }
}

/// What a posted request carries.
enum Post {
    /// The message to the echo sample.
    Send(DeviceBuf),
    /// The receive for its echo.
    Recv(DeviceBuf),
    /// The registration of the target, then of the sink.
    RegTarget,
    RegSink,
    /// The pattern WRITTEN into the target.
    Write(DeviceBuf),
    /// A READ of the target into the sink: the first checks the WRITE, the
    /// second the CPU's pattern.
    Read(u8),
}

impl WorkCtx for Post {
    fn sges(&self) -> SgeList<'_> {
        match self {
            Post::Send(buf) | Post::Recv(buf) | Post::Write(buf) => SgeList::one(buf, buf.len()),
            // The regions are the data of these.
            Post::RegTarget | Post::RegSink | Post::Read(_) => SgeList::new(),
        }
    }
}

/// The connections and what the loopback pair shares.
#[derive(Default)]
struct Session {
    /// To the echo sample.
    echo: Option<CmId<Client>>,
    /// The loopback pair: the active end and the end the listener accepted.
    active: Option<CmId<Client>>,
    passive: Option<CmId<Client>>,
    /// The regions, in `pd`; both ends of the loopback pair are in `pd`
    /// and complete on `cq`. Dropped after the connections, in this order.
    target: Option<Arc<Region>>,
    sink: Option<Arc<Region>>,
    pd: Option<Arc<Pd>>,
    cq: Option<Arc<Cq>>,
}

/// Which connection an event's id is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Which {
    Echo,
    Active,
    Passive,
}

impl Session {
    fn which(&self, id: &HandlerId<'_, Client>) -> Option<Which> {
        let is = |c: &Option<CmId<Client>>| c.as_ref().is_some_and(|c| c.is(id));
        if is(&self.echo) {
            Some(Which::Echo)
        } else if is(&self.active) {
            Some(Which::Active)
        } else if is(&self.passive) {
            Some(Which::Passive)
        } else {
            None
        }
    }

    /// The connections held.
    fn live(&self) -> usize {
        [&self.echo, &self.active, &self.passive]
            .iter()
            .filter(|c| c.is_some())
            .count()
    }

    fn id_mut(&mut self, which: Which) -> Option<&mut CmId<Client>> {
        match which {
            Which::Echo => self.echo.as_mut(),
            Which::Active => self.active.as_mut(),
            Which::Passive => self.passive.as_mut(),
        }
    }

    /// The active end's QP and the regions, once connected.
    fn pair(&self) -> Result<(&Qp, &Arc<Region>, &Arc<Region>)> {
        let qp = self.active.as_ref().and_then(CmId::qp).ok_or(ENOENT)?;
        match (&self.target, &self.sink) {
            (Some(target), Some(sink)) => Ok((qp, target, sink)),
            _ => Err(ENOENT),
        }
    }
}

/// The handler of every id and of every request.
#[pin_data]
struct Client {
    #[pin]
    session: Mutex<Session>,
}

impl Client {
    /// After `AddrResolved`.
    fn route(&self, id: &HandlerId<'_, Self>) -> Result {
        let mut s = self.session.lock();
        let which = s.which(id).ok_or(ENOENT)?;
        s.id_mut(which).ok_or(ENOENT)?.resolve_route(RESOLVE_MS)
    }

    /// After `RouteResolved`: the QP, and for the loopback pair its PD, CQ
    /// and regions, then the connect.
    fn connect(&self, id: &HandlerId<'_, Self>) -> Result {
        let mut s = self.session.lock();
        let param = ConnParam {
            retry_count: 7,
            rnr_retry_count: 7,
            ..ConnParam::default()
        };
        match s.which(id) {
            Some(Which::Echo) => {
                let echo = s.echo.as_mut().ok_or(ENOENT)?;
                echo.create_qp(caps(1), PollContext::Workqueue, OWNER)?;
                echo.connect(&param)
            }
            Some(Which::Active) => {
                let dev = s.active.as_ref().and_then(CmId::device).ok_or(ENODEV)?;
                let pd = Arc::new(Pd::new(&dev, OWNER)?, GFP_KERNEL)?;
                let entries = caps(2).cq_entries()? + caps(1).cq_entries()?;
                let cq = Cq::new(&dev, entries, None, PollContext::Workqueue, OWNER)?;
                let cq = Arc::new(cq, GFP_KERNEL)?;
                s.target = Some(Region::new(&pd, LEN, 0)?);
                s.sink = Some(Region::new(&pd, LEN, 0)?);
                s.pd = Some(pd.clone());
                s.cq = Some(cq.clone());
                let active = s.active.as_mut().ok_or(ENOENT)?;
                active.create_qp_on(&pd, &cq, caps(2))?;
                // One READ at a time in flight, each way.
                active.connect(&ConnParam {
                    initiator_depth: 1,
                    responder_resources: 1,
                    ..param
                })
            }
            _ => Err(ENOENT),
        }
    }

    /// A connection request to the listener: the passive end of the
    /// loopback pair, in the active end's PD.
    fn accept(&self, req: &HandlerId<'_, Self>, event: &CmEvent) -> Result {
        let (pd, cq) = {
            let s = self.session.lock();
            match (&s.pd, &s.cq, &s.passive) {
                (Some(pd), Some(cq), None) => (pd.clone(), cq.clone()),
                _ => return Err(EBUSY),
            }
        };
        // Dropped on an error, outside the lock: draining its QP waits for
        // the CQ, whose completions take the lock. The request is rejected.
        let mut child = req.adopt()?;
        child.create_qp_on(&pd, &cq, caps(1))?;
        req.accept(&ConnParam {
            // As the peer asked: it READs, this side serves.
            responder_resources: event.responder_resources,
            initiator_depth: event.initiator_depth,
            rnr_retry_count: 7,
            ..ConnParam::default()
        })?;
        self.session.lock().passive = Some(child);
        Ok(())
    }

    /// After `Established`: the echo's receive and the message; the
    /// regions' registrations.
    fn established(this: &Arc<Self>, id: &HandlerId<'_, Self>) -> Result {
        let s = this.session.lock();
        let which = s.which(id).ok_or(ENOENT)?;
        match which {
            Which::Echo => {
                pr_info!("echo: connected\n");
                let qp = s.echo.as_ref().and_then(CmId::qp).ok_or(ENOENT)?;
                let dev = qp.pd().device();
                let rx = DeviceBuf::alloc(dev, MSG_LEN, Direction::FromDevice)?;
                qp.post_recv(this, Post::Recv(rx)).map_err(|(e, _)| e)?;
                let msg = pattern_vec(SEED_MSG, MSG_LEN)?;
                let tx = DeviceBuf::map(dev, msg, Direction::ToDevice)?;
                qp.post_send(this, Post::Send(tx), SendOp::Send)
                    .map_err(|(e, _)| e)
            }
            Which::Active => {
                pr_info!("loopback: connected\n");
                let (qp, target, sink) = s.pair()?;
                let rw = Access::REMOTE_READ.union(Access::REMOTE_WRITE);
                qp.post_reg_mr(this, Post::RegTarget, target, rw)
                    .map_err(|(e, _)| e)?;
                qp.post_reg_mr(this, Post::RegSink, sink, Access::REMOTE_WRITE)
                    .map_err(|(e, _)| e)
            }
            Which::Passive => Ok(()),
        }
    }

    /// A connection failed or went: drops it, in the handler of its own
    /// event, where rdma_cm destroys its id when the handler returns (the
    /// other connections get events of their own). The last end of the
    /// loopback pair takes the regions, the PD and the CQ with it. Nothing
    /// if the module's exit has taken the connection already.
    fn stop(&self, id: &HandlerId<'_, Self>, event: &CmEvent) {
        let (conn, shared) = {
            let mut s = self.session.lock();
            let Some(which) = s.which(id) else {
                return;
            };
            let conn = match which {
                Which::Echo => s.echo.take(),
                Which::Active => s.active.take(),
                Which::Passive => s.passive.take(),
            };
            let shared = if s.active.is_none() && s.passive.is_none() {
                (s.target.take(), s.sink.take(), s.pd.take(), s.cq.take())
            } else {
                (None, None, None, None)
            };
            (conn.map(|c| (which, c)), shared)
        };
        let name = match conn.as_ref().map(|(which, _)| *which) {
            Some(Which::Echo) => "echo",
            Some(Which::Active) => "loopback (active end)",
            _ => "loopback (passive end)",
        };
        pr_info!(
            "{:?} (status {}): {} connection closed\n",
            event.kind,
            event.status,
            name
        );
        // Out of the lock: draining the QP waits for completions, which
        // take it. The connection first, then what its QP held.
        drop(conn);
        drop(shared);
    }

    /// The next step after the completion of `post`.
    fn next(this: &Arc<Self>, wc: &Wc, post: Post) -> Result {
        match post {
            Post::Send(_) | Post::RegTarget => Ok(()),
            Post::Recv(buf) => {
                let data = buf.into_cpu();
                let len = wc.byte_len as usize;
                let same = len == MSG_LEN
                    && data
                        .iter()
                        .enumerate()
                        .all(|(i, b)| *b == pattern(SEED_MSG, i));
                if same {
                    pr_info!("SEND/RECV verified: {} bytes echoed\n", len);
                } else {
                    pr_err!("SEND/RECV: the echo of {} bytes differs\n", len);
                }
                Ok(())
            }
            Post::RegSink => {
                pr_info!("2 regions of {} bytes registered\n", LEN);
                let s = this.session.lock();
                let (qp, target, _) = s.pair()?;
                let data = pattern_vec(SEED_WRITE, LEN)?;
                let buf = DeviceBuf::map(qp.pd().device(), data, Direction::ToDevice)?;
                let op = SendOp::Write {
                    remote_addr: target.iova(),
                    rkey: target.rkey(),
                };
                qp.post_send(this, Post::Write(buf), op).map_err(|(e, _)| e)
            }
            Post::Write(_) => Self::read(this, 1),
            Post::Read(1) => {
                let s = this.session.lock();
                let (_, target, sink) = s.pair()?;
                if holds(target, SEED_WRITE)? && holds(sink, SEED_WRITE)? {
                    pr_info!("RDMA WRITE verified: {} bytes in the target\n", LEN);
                } else {
                    pr_err!("RDMA WRITE: the target differs\n");
                    return Ok(());
                }
                target.write(0, &pattern_vec(SEED_CPU, LEN)?)?;
                drop(s);
                Self::read(this, 2)
            }
            Post::Read(_) => {
                let s = this.session.lock();
                let (_, _, sink) = s.pair()?;
                if holds(sink, SEED_CPU)? {
                    pr_info!("RDMA READ verified: {} bytes in the sink\n", LEN);
                } else {
                    pr_err!("RDMA READ: the sink differs\n");
                }
                Ok(())
            }
        }
    }

    /// READs the whole target into the sink.
    fn read(this: &Arc<Self>, round: u8) -> Result {
        let s = this.session.lock();
        let (qp, target, sink) = s.pair()?;
        qp.post_read_into(
            this,
            Post::Read(round),
            sink,
            LEN,
            target.iova(),
            target.rkey(),
            false,
        )
        .map_err(|(e, _)| e)
    }
}

impl CmHandler for Client {
    fn event(this: &Arc<Self>, id: &HandlerId<'_, Self>, event: &CmEvent) {
        let done = match event.kind {
            CmEventKind::ConnectRequest => this.accept(id, event),
            CmEventKind::AddrResolved => this.route(id),
            CmEventKind::RouteResolved => this.connect(id),
            CmEventKind::Established => Self::established(this, id),
            CmEventKind::TimewaitExit | CmEventKind::Other(_) => Ok(()),
            _ => {
                this.stop(id, event);
                Ok(())
            }
        };
        if let Err(e) = done {
            pr_err!("{:?}: {:?}\n", event.kind, e);
        }
    }
}

impl CompletionHandler for Client {
    type Ctx = Post;

    fn complete(this: &Arc<Self>, wc: &Wc, post: Post) {
        if !wc.ok() {
            // Flushed: the connection is going.
            if !wc.flushed() {
                pr_err!("a request failed: {}\n", wc.status_msg());
            }
            return;
        }
        if let Err(e) = Self::next(this, wc, post) {
            pr_err!("the next step failed: {:?}\n", e);
        }
    }
}

struct RustRdmaClient {
    listener: Option<CmId<Client>>,
    client: Arc<Client>,
}

impl RustRdmaClient {
    /// Starts resolving both connections.
    fn start(client: &Arc<Client>, module: &'static ThisModule) -> Result {
        let mut guard = client.session.lock();
        let s = &mut *guard;
        for (slot, port) in [(&mut s.echo, ECHO_PORT), (&mut s.active, OWN_PORT)] {
            // Stored before the first event can come: resolving starts
            // under the lock, which the handler waits for.
            let id = slot.insert(CmId::new(client.clone(), PortSpace::Tcp, module)?);
            id.resolve_addr(&SockAddr::v4(PEER, port), RESOLVE_MS)?;
        }
        Ok(())
    }
}

impl kernel::Module for RustRdmaClient {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let client = Arc::pin_init(
            pin_init!(Client {
                session <- new_mutex!(Session::default()),
            }),
            GFP_KERNEL,
        )?;
        let mut listener = CmId::new(client.clone(), PortSpace::Tcp, module)?;
        listener.listen(&SockAddr::v4([0; 4], OWN_PORT), 1)?;
        let [a, b, c, d] = PEER;
        pr_info!(
            "connecting to {}.{}.{}.{}, ports {} (echo) and {} (own passive side)\n",
            a,
            b,
            c,
            d,
            ECHO_PORT,
            OWN_PORT
        );
        if let Err(e) = Self::start(&client, module) {
            // The ids hold the client: taken out, or they would keep it.
            let session = core::mem::take(&mut *client.session.lock());
            drop(session);
            return Err(e);
        }
        Ok(Self {
            listener: Some(listener),
            client,
        })
    }
}

impl Drop for RustRdmaClient {
    fn drop(&mut self) {
        // No new connection to the passive side.
        drop(self.listener.take());
        // Out of the lock: dropping a connection drains its QP, whose
        // completions take the lock.
        let session = core::mem::take(&mut *self.client.session.lock());
        pr_info!("unloading with {} connection(s) up\n", session.live());
        drop(session);
    }
}
