// SPDX-License-Identifier: GPL-2.0

//! A module that leaks what it makes through `kernel::rdma`, and is then
//! unloaded: leaking is safe Rust, so nothing may call into the module once
//! it is gone (the guest test `kernel_rdma_leak`).
//!
//! It listens on 203.0.113.22, port 7472, and echoes each message of the
//! one connection it takes. Its exit function leaves everything behind: the
//! listener is forgotten (`core::mem::forget`), the connection's id and the
//! `ib_client` registration are kept by the handler, which the ids' contexts
//! keep (an `Arc` cycle). After `rmmod`, a request to the listener, a
//! message to the connection (its receive completes) and a new device must
//! not reach the module's code, and `rdma resource show` must still read
//! the ids' names. The client is ended as the module goes: its `remove`
//! runs for each device then. No `unsafe` in this file.

use kernel::prelude::*;
use kernel::{
    c_str, new_mutex,
    rdma::{
        cm::{CmEvent, CmEventKind, CmHandler, CmId, ConnParam, HandlerId, PortSpace, SockAddr},
        cq::PollContext,
        device::{Client, ClientRegistration, Device},
        dma::{DeviceBuf, Direction},
        qp::{QpCaps, SendOp},
        wc::Wc,
        work::{CompletionHandler, SgeList, WorkCtx},
    },
    sync::{Arc, Mutex},
};

module! {
    type: RdmaLeak,
    name: "rdma_leak",
    author: "rdma-krust developers",
    description: "kernel::rdma objects leaked by a module that goes (test only)",
    license: "GPL",
}

const ADDR: [u8; 4] = [203, 0, 113, 22];
const PORT: u16 = 7472;
/// Receives kept posted, and the largest message.
const DEPTH: u32 = 4;
const MSG_MAX: usize = 64;

/// The `ib_client` the module leaves behind.
struct Watcher;

impl Client for Watcher {
    type DeviceData = ();

    fn add(&self, dev: &Device) -> Result {
        pr_info!("client added to device {}\n", dev.index());
        Ok(())
    }

    fn remove(&self, dev: &Device, _data: ()) {
        pr_info!("client removed from device {}\n", dev.index());
    }
}

kernel::rdma_client_slot!(Watcher);

/// A posted request's buffer.
enum Post {
    Recv(DeviceBuf),
    Send(DeviceBuf),
}

impl WorkCtx for Post {
    fn sges(&self) -> SgeList<'_> {
        match self {
            Post::Recv(buf) | Post::Send(buf) => SgeList::one(buf, buf.len()),
        }
    }
}

/// The listener's handler, and its connection's: it keeps the connection
/// and the client registration, and the ids' contexts keep it.
#[pin_data]
struct Leak {
    #[pin]
    conn: Mutex<Option<CmId<Leak>>>,
    #[pin]
    client: Mutex<Option<ClientRegistration<Watcher>>>,
}

impl Leak {
    /// Takes the request on `req`: a QP, its receives, the accept.
    fn accept(this: &Arc<Self>, req: &HandlerId<'_, Self>) -> Result {
        if this.conn.lock().is_some() {
            return Err(EBUSY);
        }
        let mut id = req.adopt()?;
        let dev = id.device().ok_or(ENODEV)?;
        let caps = QpCaps {
            send_wr: DEPTH,
            recv_wr: DEPTH,
            send_sge: 1,
            recv_sge: 1,
            max_inline: 0,
        };
        let qp = id.create_qp(caps, PollContext::Workqueue, c_str!("rdma_leak"))?;
        for _ in 0..DEPTH {
            let buf = DeviceBuf::alloc(&dev, MSG_MAX, Direction::FromDevice)?;
            qp.post_recv(this, Post::Recv(buf)).map_err(|(e, _)| e)?;
        }
        *this.conn.lock() = Some(id);
        let param = ConnParam {
            rnr_retry_count: 7,
            ..ConnParam::default()
        };
        req.accept(&param)
    }
}

impl CmHandler for Leak {
    fn event(this: &Arc<Self>, id: &HandlerId<'_, Self>, event: &CmEvent) {
        match event.kind {
            CmEventKind::ConnectRequest => {
                if let Err(e) = Self::accept(this, id) {
                    pr_info!("refused a connection: {:?}\n", e);
                }
            }
            CmEventKind::Established => pr_info!("connection established\n"),
            CmEventKind::Disconnected => pr_info!("connection disconnected\n"),
            _ => {}
        }
    }
}

impl CompletionHandler for Leak {
    type Ctx = Post;

    fn complete(this: &Arc<Self>, wc: &Wc, post: Post) {
        let Post::Recv(buf) = post else {
            return;
        };
        if !wc.ok() {
            return;
        }
        let len = (wc.byte_len as usize).min(MSG_MAX);
        pr_info!("received {} bytes\n", len);
        let cpu = buf.into_cpu();
        let mut data = KVec::new();
        let copied = data.extend_from_slice(&cpu[..len], GFP_KERNEL);
        let buf = cpu.into_device();
        let conn = this.conn.lock();
        let Some(qp) = conn.as_ref().and_then(|id| id.qp()) else {
            return;
        };
        let _ = qp.post_recv(this, Post::Recv(buf));
        let echo = copied
            .map_err(|_| ENOMEM)
            .and_then(|()| DeviceBuf::map(qp.pd().device(), data, Direction::ToDevice))
            .and_then(|buf| {
                qp.post_send(this, Post::Send(buf), SendOp::Send)
                    .map_err(|(e, _)| e)
            });
        if let Err(e) = echo {
            pr_info!("a message was not echoed: {:?}\n", e);
        }
    }
}

struct RdmaLeak;

impl kernel::Module for RdmaLeak {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let leak = Arc::pin_init(
            pin_init!(Leak {
                conn <- new_mutex!(None),
                client <- new_mutex!(None),
            }),
            GFP_KERNEL,
        )?;
        *leak.client.lock() = Some(ClientRegistration::new(
            module,
            c_str!("rdma_leak"),
            Watcher,
        )?);
        let mut listener = CmId::new(leak.clone(), PortSpace::Tcp, module)?;
        listener.listen(&SockAddr::v4(ADDR, PORT), 1)?;
        pr_info!("listening on port {}\n", PORT);
        core::mem::forget(listener);
        Ok(RdmaLeak)
    }
}

impl Drop for RdmaLeak {
    fn drop(&mut self) {
        pr_info!("exit: the listener, its connection and the client stay behind\n");
    }
}
