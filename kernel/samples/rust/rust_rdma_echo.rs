// SPDX-License-Identifier: GPL-2.0

//! Rust RDMA sample: a server that echoes every message it receives.
//!
//! It listens with the RDMA/CM on port 7, the echo protocol's, of every
//! IPv4 address of every RDMA device, present or to come. A peer connects a
//! reliable-connected queue pair and SENDs messages of up to 4 KiB, with a
//! receive posted for each; every message comes back to it as a SEND of the
//! same bytes. Each receive lands in two buffers of 2 KiB, a scatter/gather
//! list of two entries. Each connection has a PD and a completion queue of
//! its own.

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
    str::CStr,
    sync::{Arc, Mutex},
};

module! {
    type: RustRdmaEcho,
    name: "rust_rdma_echo",
    author: "Rust for Linux Contributors",
    description: "Rust RDMA echo server sample",
    license: "GPL",
}

const PORT: u16 = 7;
/// Connections served at once; more are refused.
const MAX_CONNS: usize = 32;
/// Receives each connection keeps posted, and echoes in flight.
const DEPTH: u32 = 16;
/// The largest message: the two halves of a receive.
const HALF: usize = 2048;
const MSG_MAX: usize = 2 * HALF;
const OWNER: &CStr = c_str!("rust_rdma_echo");

/// A connection: its id, which owns its queue pair, and its number, which
/// its receives carry.
struct Conn {
    nr: u64,
    id: CmId<Echo>,
}

/// What a posted request carries: its buffer, and for a receive the
/// connection's slot and number.
enum Post {
    Recv {
        slot: usize,
        nr: u64,
        bufs: [DeviceBuf; 2],
    },
    Send(DeviceBuf),
}

impl WorkCtx for Post {
    fn sges(&self) -> SgeList<'_> {
        match self {
            Post::Recv { bufs: [a, b], .. } => {
                let mut list = SgeList::one(a, HALF);
                // Two entries of the four a list holds: cannot fail.
                let _ = list.push(b, HALF);
                list
            }
            Post::Send(buf) => SgeList::one(buf, buf.len()),
        }
    }
}

struct Conns {
    slots: KVec<Option<Conn>>,
    next_nr: u64,
}

/// The server: the listener's events, its connections' events and their
/// completions all come here.
#[pin_data]
struct Echo {
    #[pin]
    conns: Mutex<Conns>,
}

impl Echo {
    /// Sets up a connection for the request on `req` and accepts it.
    fn accept(this: &Arc<Self>, req: &HandlerId<'_, Self>) -> Result {
        let (slot, nr) = {
            let mut c = this.conns.lock();
            let slot = c.slots.iter().position(Option::is_none).ok_or(EBUSY)?;
            c.next_nr += 1;
            (slot, c.next_nr)
        };
        let mut id = req.adopt()?;
        if let Err(e) = Self::start(this, &mut id, slot, nr) {
            let _ = req.reject();
            req.disown(id);
            return Err(e);
        }
        // Stored before the accept: its receives complete from then on.
        // Requests come one at a time, so the slot is still free.
        this.conns.lock().slots[slot] = Some(Conn { nr, id });
        let param = ConnParam {
            rnr_retry_count: 7,
            ..ConnParam::default()
        };
        if let Err(e) = req.accept(&param) {
            let conn = this.conns.lock().slots[slot].take();
            // Outside the lock, as in `close()`.
            if let Some(conn) = conn {
                req.disown(conn.id);
            }
            return Err(e);
        }
        Ok(())
    }

    /// Creates the queue pair of `id` and posts its receives.
    fn start(this: &Arc<Self>, id: &mut CmId<Self>, slot: usize, nr: u64) -> Result {
        let dev = id.device().ok_or(ENODEV)?;
        let caps = QpCaps {
            send_wr: DEPTH,
            recv_wr: DEPTH,
            send_sge: 1,
            recv_sge: 2,
            max_inline: 0,
        };
        // A PD and a CQ of its own, the CQ reaped on ib_core's workqueue.
        let qp = id.create_qp(caps, PollContext::Workqueue, OWNER)?;
        for _ in 0..DEPTH {
            let bufs = [
                DeviceBuf::alloc(&dev, HALF, Direction::FromDevice)?,
                DeviceBuf::alloc(&dev, HALF, Direction::FromDevice)?,
            ];
            qp.post_recv(this, Post::Recv { slot, nr, bufs })
                .map_err(|(e, _)| e)?;
        }
        Ok(())
    }

    /// Ends the connection of `id`, if it is one.
    fn close(this: &Arc<Self>, id: &HandlerId<'_, Self>) {
        let conn = {
            let mut c = this.conns.lock();
            c.slots
                .iter_mut()
                .find(|s| s.as_ref().is_some_and(|conn| conn.id.is(id)))
                .and_then(Option::take)
        };
        // Outside the lock: draining the QP runs completions, which take it.
        if let Some(conn) = conn {
            let _ = id.release(conn.id);
        }
    }
}

impl CmHandler for Echo {
    fn event(this: &Arc<Self>, id: &HandlerId<'_, Self>, event: &CmEvent) {
        match event.kind {
            CmEventKind::ConnectRequest => {
                // Debug level: any peer can make these happen, often.
                if let Err(e) = Self::accept(this, id) {
                    pr_debug!("refused a connection: {:?}\n", e);
                }
            }
            CmEventKind::Disconnected
            | CmEventKind::DeviceRemoval
            | CmEventKind::ConnectError
            | CmEventKind::Unreachable
            | CmEventKind::Rejected => Self::close(this, id),
            _ => {}
        }
    }
}

impl CompletionHandler for Echo {
    type Ctx = Post;

    fn complete(this: &Arc<Self>, wc: &Wc, post: Post) {
        // A sent echo's buffer is unmapped and freed as it drops here.
        let Post::Recv { slot, nr, bufs } = post else {
            return;
        };
        if !wc.ok() {
            return;
        }
        // The message fills the first half, then the second.
        let len = (wc.byte_len as usize).min(MSG_MAX);
        let mut data = KVec::new();
        let mut copied = Ok(());
        let bufs = bufs.map(|buf| {
            let cpu = buf.into_cpu();
            let n = (len - data.len()).min(cpu.len());
            copied = copied.and(data.extend_from_slice(&cpu[..n], GFP_KERNEL));
            cpu.into_device()
        });
        let conns = this.conns.lock();
        let Some(Some(conn)) = conns.slots.get(slot) else {
            return;
        };
        let Some(qp) = conn.id.qp().filter(|_| conn.nr == nr) else {
            return;
        };
        // The receive first, for the peer's next message, then the echo.
        if qp.post_recv(this, Post::Recv { slot, nr, bufs }).is_err() {
            pr_debug!("connection {}: a receive could not be posted again\n", nr);
        }
        let echo = copied
            .map_err(|_| ENOMEM)
            .and_then(|()| DeviceBuf::map(qp.pd().device(), data, Direction::ToDevice))
            .and_then(|buf| {
                qp.post_send(this, Post::Send(buf), SendOp::Send)
                    .map_err(|(e, _)| e)
            });
        if let Err(e) = echo {
            pr_debug!("connection {}: a message was not echoed: {:?}\n", nr, e);
        }
    }
}

struct RustRdmaEcho {
    listener: Option<CmId<Echo>>,
    echo: Arc<Echo>,
}

impl kernel::Module for RustRdmaEcho {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let mut slots = KVec::with_capacity(MAX_CONNS, GFP_KERNEL)?;
        for _ in 0..MAX_CONNS {
            slots.push(None, GFP_KERNEL)?;
        }
        let echo = Arc::pin_init(
            pin_init!(Echo {
                conns <- new_mutex!(Conns { slots, next_nr: 0 }),
            }),
            GFP_KERNEL,
        )?;
        let mut listener = CmId::new(echo.clone(), PortSpace::Tcp, module)?;
        listener.listen(&SockAddr::v4([0; 4], PORT), MAX_CONNS as i32)?;
        pr_info!("echoing on port {}\n", PORT);
        Ok(Self {
            listener: Some(listener),
            echo,
        })
    }
}

impl Drop for RustRdmaEcho {
    fn drop(&mut self) {
        // No new connections, and no listener's handler running.
        drop(self.listener.take());
        let mut conns = self.echo.conns.lock();
        let all: KVec<Option<Conn>> = core::mem::take(&mut conns.slots);
        drop(conns);
        drop(all);
    }
}
