// SPDX-License-Identifier: GPL-2.0

//! An active side driven from its own id's handler, as nvme-rdma connects
//! from `ROUTE_RESOLVED`, for the guest test `kernel_rdma_connect_in_handler`.
//!
//! It resolves 203.0.113.26, port 7 (the series' echo sample), and from
//! then on everything happens in the id's handler, which holds the id's
//! handler mutex: resolving the route, creating the QP, posting a receive,
//! `connect()` (which must not wait for that mutex: `rdma_connect_locked()`
//! there), and on `ESTABLISHED` sending "ping". The echo's completion logs
//! `echo received: ok`. No `unsafe` in this file.

use kernel::prelude::*;
use kernel::{
    c_str, new_mutex,
    rdma::{
        cm::{CmEvent, CmEventKind, CmHandler, CmId, ConnParam, HandlerId, PortSpace, SockAddr},
        cq::PollContext,
        dma::{DeviceBuf, Direction},
        qp::{QpCaps, SendOp},
        wc::Wc,
        work::{CompletionHandler, SgeList, WorkCtx},
    },
    sync::{Arc, Mutex},
};

module! {
    type: RdmaActive,
    name: "rdma_active",
    author: "rdma-krust developers",
    description: "kernel::rdma active side connected from its own handler (test only)",
    license: "GPL",
}

const SERVER: [u8; 4] = [203, 0, 113, 26];
const PORT: u16 = 7;
const PING: &[u8] = b"ping";
/// Milliseconds for address and route resolution.
const RESOLVE_MS: u32 = 5000;

/// A posted request's buffer.
enum Msg {
    Recv(DeviceBuf),
    Send(DeviceBuf),
}

impl WorkCtx for Msg {
    fn sges(&self) -> SgeList<'_> {
        match self {
            Msg::Recv(buf) | Msg::Send(buf) => SgeList::one(buf, buf.len()),
        }
    }
}

/// The id's handler, which keeps the id (until the module's exit).
#[pin_data]
struct Active {
    #[pin]
    id: Mutex<Option<CmId<Active>>>,
}

impl Active {
    /// Runs `f` on the id, from its handler.
    fn with_id(&self, f: impl FnOnce(&mut CmId<Self>) -> Result) -> Result {
        f(self.id.lock().as_mut().ok_or(ENOENT)?)
    }

    /// After `RouteResolved`: the QP, a receive for the echo, the connect.
    fn connect(this: &Arc<Self>, id: &mut CmId<Self>) -> Result {
        let dev = id.device().ok_or(ENODEV)?;
        let caps = QpCaps {
            send_wr: 1,
            recv_wr: 1,
            send_sge: 1,
            recv_sge: 1,
            max_inline: 0,
        };
        let qp = id.create_qp(caps, PollContext::Workqueue, c_str!("rdma_active"))?;
        let buf = DeviceBuf::alloc(&dev, 64, Direction::FromDevice)?;
        qp.post_recv(this, Msg::Recv(buf)).map_err(|(e, _)| e)?;
        id.connect(&ConnParam {
            retry_count: 7,
            rnr_retry_count: 7,
            ..ConnParam::default()
        })?;
        pr_info!("connect() in its own handler returned\n");
        Ok(())
    }

    /// After `Established`: "ping".
    fn ping(this: &Arc<Self>, id: &mut CmId<Self>) -> Result {
        let qp = id.qp().ok_or(EINVAL)?;
        let mut data = KVec::new();
        data.extend_from_slice(PING, GFP_KERNEL)?;
        let buf = DeviceBuf::map(qp.pd().device(), data, Direction::ToDevice)?;
        qp.post_send(this, Msg::Send(buf), SendOp::Send)
            .map_err(|(e, _)| e)
    }
}

impl CmHandler for Active {
    fn event(this: &Arc<Self>, _id: &HandlerId<'_, Self>, event: &CmEvent) {
        let done = match event.kind {
            CmEventKind::AddrResolved => this.with_id(|id| id.resolve_route(RESOLVE_MS)),
            CmEventKind::RouteResolved => this.with_id(|id| Self::connect(this, id)),
            CmEventKind::Established => this.with_id(|id| Self::ping(this, id)),
            kind => {
                pr_info!("event {:?}, status {}\n", kind, event.status);
                Ok(())
            }
        };
        if let Err(e) = done {
            pr_info!("{:?} failed: {:?}\n", event.kind, e);
        }
    }
}

impl CompletionHandler for Active {
    type Ctx = Msg;

    fn complete(_this: &Arc<Self>, wc: &Wc, msg: Msg) {
        let Msg::Recv(buf) = msg else {
            return;
        };
        if !wc.ok() {
            pr_info!("echo not received: {:?}\n", wc);
            return;
        }
        let cpu = buf.into_cpu();
        let len = (wc.byte_len as usize).min(cpu.len());
        if &cpu[..len] == PING {
            pr_info!("echo received: ok\n");
        } else {
            pr_info!("echo received: {} bytes that differ\n", len);
        }
    }
}

struct RdmaActive {
    active: Arc<Active>,
}

impl kernel::Module for RdmaActive {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let active = Arc::pin_init(pin_init!(Active { id <- new_mutex!(None) }), GFP_KERNEL)?;
        let id = CmId::new(active.clone(), PortSpace::Tcp, module)?;
        // Stored before the first event can come: resolving starts under
        // the lock, which the handler waits for.
        let mut slot = active.id.lock();
        slot.insert(id)
            .resolve_addr(&SockAddr::v4(SERVER, PORT), RESOLVE_MS)?;
        drop(slot);
        pr_info!("resolving\n");
        Ok(Self { active })
    }
}

impl Drop for RdmaActive {
    fn drop(&mut self) {
        // Out of the lock first: dropping it waits for its handler, which
        // takes the lock.
        let id = self.active.id.lock().take();
        drop(id);
    }
}
