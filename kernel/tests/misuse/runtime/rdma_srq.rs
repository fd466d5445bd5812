// SPDX-License-Identifier: GPL-2.0

//! Run-time checks of `kernel::rdma`'s shared receive queue: a second user
//! of `Srq`, and what its types cannot rule out refused with an errno.
//!
//! The module listens on port 7472 of every address. On the first
//! connection request it makes an SRQ of `DEPTH` receives in a PD of the
//! request's device and runs the checks that need no connection; every
//! connection's QP is created on that SRQ, tagged with the connection's
//! number. Each message a peer sends lands in a receive of the SRQ; the
//! handler finds the connection by the completion's tag, echoes the bytes
//! on that connection's QP (so a peer that gets its own bytes back proves
//! the tag right), and posts the buffer to the SRQ again. The first three
//! receives are held back, not reposted until the limit event the SRQ was
//! armed for has come. The checks that need a QP on the SRQ run on the
//! first connection. The checks print KTAP, and a closing `srq: N passed,
//! N failed` line once the third connection has closed. At unload every
//! buffer it made must have come back, the receives still queued on the
//! SRQ included: `srq: N buffers live at exit`. No `unsafe` in this file.

mod ktap;
use ktap::{expect_err, expect_errno, Tap};

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use kernel::prelude::*;
use kernel::{
    c_str, new_mutex,
    rdma::{
        cm::{CmEvent, CmEventKind, CmHandler, CmId, ConnParam, HandlerId, PortSpace, SockAddr},
        cq::PollContext,
        device::{Client, ClientRegistration, Device, DeviceRef},
        dma::{DeviceBuf, Direction},
        pd::Pd,
        qp::{QpCaps, SendOp},
        srq::Srq,
        wc::Wc,
        work::{CompletionHandler, SgeList, WorkCtx},
    },
    str::CStr,
    sync::{Arc, Mutex},
    workqueue::{self, impl_has_work, new_work, Work, WorkItem},
};

module! {
    type: RdmaSrq,
    name: "rdma_srq",
    author: "rdma-krust developers",
    description: "kernel::rdma shared receive queue checks (test only)",
    license: "GPL",
}

const PORT: u16 = 7472;
const OWNER: &CStr = c_str!("rdma_srq");
/// Receives on the SRQ; the peers' messages are at most `BUF` bytes.
const DEPTH: u32 = 16;
const BUF: usize = 4096;
/// Receives held back before reposting, and the limit armed: holding three
/// of 16 leaves 13, below 14.
const HELD: usize = 3;
const LIMIT: u32 = 14;
/// Connections taken at most (tags 1 to `CONNS`).
const CONNS: usize = 3;

/// Buffers of this module not yet freed: every one must be back at exit.
static LIVE: AtomicU32 = AtomicU32::new(0);

/// A receive's or a SEND's buffer, counted in `LIVE`.
struct Buf(Option<DeviceBuf>);

impl Buf {
    fn alloc(dev: &DeviceRef, len: usize, dir: Direction) -> Result<Self> {
        let b = DeviceBuf::alloc(dev, len, dir)?;
        LIVE.fetch_add(1, Ordering::AcqRel);
        Ok(Self(Some(b)))
    }

    fn map(dev: &DeviceRef, bytes: KVec<u8>, dir: Direction) -> Result<Self> {
        let b = DeviceBuf::map(dev, bytes, dir)?;
        LIVE.fetch_add(1, Ordering::AcqRel);
        Ok(Self(Some(b)))
    }
}

impl Buf {
    /// The buffer, out of the count.
    fn take(mut self) -> Option<DeviceBuf> {
        let b = self.0.take();
        if b.is_some() {
            LIVE.fetch_sub(1, Ordering::AcqRel);
        }
        b
    }

    /// `b` in the count again.
    fn wrap(b: DeviceBuf) -> Self {
        LIVE.fetch_add(1, Ordering::AcqRel);
        Self(Some(b))
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        if self.0.take().is_some() {
            LIVE.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// What a request carries: a receive of the SRQ, or an echo's SEND.
enum Ctx {
    Rx(Buf),
    Tx(Buf),
    /// Two buffers: more entries than the SRQ's one.
    Two(Buf, Buf),
}

impl WorkCtx for Ctx {
    fn sges(&self) -> SgeList<'_> {
        match self {
            Ctx::Rx(Buf(Some(b))) | Ctx::Tx(Buf(Some(b))) => SgeList::one(b, b.len()),
            Ctx::Two(Buf(Some(a)), Buf(Some(b))) => {
                let mut l = SgeList::one(a, a.len());
                let _ = l.push(b, b.len());
                l
            }
            _ => SgeList::new(),
        }
    }
}

/// The devices present, for the cross-device check.
#[pin_data]
struct Devices {
    #[pin]
    list: Mutex<KVec<DeviceRef>>,
}

struct DevClient(Arc<Devices>);

impl Client for DevClient {
    type DeviceData = ();

    fn add(&self, dev: &Device) -> Result {
        let r = dev.try_get().ok_or(ENODEV)?;
        self.0.list.lock().push(r, GFP_KERNEL)?;
        Ok(())
    }

    fn remove(&self, dev: &Device, _data: ()) {
        let mut list = self.0.list.lock();
        let old = core::mem::take(&mut *list);
        for d in old.iter() {
            if d.index() != dev.index() {
                let _ = list.push(d.clone(), GFP_KERNEL);
            }
        }
    }
}

kernel::rdma_client_slot!(DevClient);

#[pin_data]
struct SrqTest {
    devices: Arc<Devices>,
    module: &'static ThisModule,
    #[pin]
    srq: Mutex<Option<Arc<Srq>>>,
    /// The connections, by tag - 1.
    #[pin]
    conns: Mutex<KVec<Option<CmId<SrqTest>>>>,
    /// Receives held back until the limit event.
    #[pin]
    held: Mutex<KVec<Option<Buf>>>,
    /// Connections accepted so far, closed so far.
    accepted: AtomicU32,
    closed: AtomicU32,
    /// Messages echoed, by tag; receives whose tag named no connection.
    echoed: [AtomicU64; CONNS],
    stray: AtomicU32,
    #[pin]
    tap: Mutex<Tap>,
    #[pin]
    work: Work<SrqTest>,
}

impl_has_work! {
    impl HasWork<Self> for SrqTest { self.work }
}

impl SrqTest {
    const CAPS: QpCaps = QpCaps {
        send_wr: 16,
        recv_wr: 0,
        send_sge: 1,
        recv_sge: 1,
        max_inline: 0,
    };

    fn check(&self, name: &str, r: Result) {
        self.tap.lock().check(name, r);
    }

    /// The SRQ, made on the first request's device, full, and the checks
    /// that need no QP.
    fn make_srq(this: &Arc<Self>, dev: &DeviceRef) -> Result<Arc<Srq>> {
        pr_info!("KTAP version 1\n");
        let pd = Arc::new(Pd::new(dev, OWNER)?, GFP_KERNEL)?;
        this.check(
            "srq_depth_0_refused",
            expect_errno(Srq::new(&pd, 0, 1, this.module).map(drop), EINVAL),
        );
        this.check(
            "srq_sge_0_refused",
            expect_errno(Srq::new(&pd, 4, 0, this.module).map(drop), EINVAL),
        );
        let srq = Srq::new(&pd, DEPTH, 1, this.module)?;
        // A buffer the device would only read is no receive.
        let wrong = Buf::alloc(dev, BUF, Direction::ToDevice)?;
        this.check(
            "srq_device_read_buffer_refused",
            expect_err(srq.post_recv(this, Ctx::Rx(wrong)), EINVAL),
        );
        let two = Ctx::Two(
            Buf::alloc(dev, 64, Direction::FromDevice)?,
            Buf::alloc(dev, 64, Direction::FromDevice)?,
        );
        this.check(
            "srq_too_many_entries_refused",
            expect_err(srq.post_recv(this, two), EINVAL),
        );
        let other = this
            .devices
            .list
            .lock()
            .iter()
            .find(|d| d.index() != dev.index())
            .cloned();
        match other {
            Some(o) => {
                let foreign = Buf::alloc(&o, BUF, Direction::FromDevice)?;
                this.check(
                    "srq_foreign_device_buffer_refused",
                    expect_err(srq.post_recv(this, Ctx::Rx(foreign)), EINVAL),
                );
            }
            None => {
                let mut t = this.tap.lock();
                t.n += 1;
                t.passed += 1;
                pr_info!(
                    "ok {} srq_foreign_device_buffer_refused # SKIP one device\n",
                    t.n
                );
            }
        }
        for _ in 0..DEPTH {
            let b = Buf::alloc(dev, BUF, Direction::FromDevice)?;
            srq.post_recv(this, Ctx::Rx(b)).map_err(|(e, _)| e)?;
        }
        let extra = Buf::alloc(dev, BUF, Direction::FromDevice)?;
        this.check(
            "srq_full_refused",
            expect_err(srq.post_recv(this, Ctx::Rx(extra)), ENOBUFS),
        );
        this.check(
            "srq_room_counted",
            if srq.room() == 0 { Ok(()) } else { Err(ERANGE) },
        );
        this.check(
            "srq_limit_0_refused",
            expect_errno(srq.arm_limit(0), EINVAL),
        );
        this.check(
            "srq_limit_depth_refused",
            expect_errno(srq.arm_limit(DEPTH), EINVAL),
        );
        srq.arm_limit(LIMIT)?;
        Ok(srq)
    }

    fn accept(this: &Arc<Self>, req: &HandlerId<'_, Self>, ev: &CmEvent) -> Result {
        let mut id = req.adopt()?;
        let dev = id.device().ok_or(ENODEV)?;
        let srq = {
            let mut s = this.srq.lock();
            match &*s {
                Some(srq) => srq.clone(),
                None => {
                    let srq = Self::make_srq(this, &dev)?;
                    *s = Some(srq.clone());
                    srq
                }
            }
        };
        let nr = this.accepted.fetch_add(1, Ordering::AcqRel) + 1;
        if nr == 1 {
            // A receive queue of its own beside the SRQ is refused.
            let caps = QpCaps {
                recv_wr: 8,
                ..Self::CAPS
            };
            this.check(
                "qp_with_own_receives_on_srq_refused",
                expect_errno(
                    id.create_qp_on_srq(&srq, caps, PollContext::Workqueue, 1, OWNER)
                        .map(drop),
                    EINVAL,
                ),
            );
            this.check(
                "softirq_cq_on_srq_refused",
                expect_errno(
                    id.create_qp_on_srq(&srq, Self::CAPS, PollContext::Softirq, 1, OWNER)
                        .map(drop),
                    EINVAL,
                ),
            );
        }
        let qp = id.create_qp_on_srq(
            &srq,
            Self::CAPS,
            PollContext::Workqueue,
            u64::from(nr),
            OWNER,
        )?;
        if nr == 1 {
            // Its receives are the SRQ's.
            let b = Buf::alloc(&dev, BUF, Direction::FromDevice)?;
            this.check(
                "qp_on_srq_post_recv_refused",
                expect_err(qp.post_recv(this, Ctx::Rx(b)), EINVAL),
            );
        }
        {
            let mut conns = this.conns.lock();
            let slot = conns.get_mut(nr as usize - 1).ok_or(EBUSY)?;
            *slot = Some(id);
        }
        let param = ConnParam {
            rnr_retry_count: 7,
            responder_resources: ev.responder_resources.min(1),
            initiator_depth: 0,
            ..ConnParam::default()
        };
        req.accept(&param)
    }

    /// Echoes `data` on connection `tag`.
    fn echo(this: &Arc<Self>, tag: u64, data: &[u8]) -> Result {
        let conns = this.conns.lock();
        let id = conns
            .get((tag as usize).wrapping_sub(1))
            .and_then(Option::as_ref)
            .ok_or(ENOENT)?;
        let qp = id.qp().ok_or(ENODEV)?;
        let mut bytes = KVec::new();
        bytes.extend_from_slice(data, GFP_KERNEL)?;
        let dev = qp.pd().device().clone();
        let tx = Buf::map(&dev, bytes, Direction::ToDevice)?;
        qp.post_send(this, Ctx::Tx(tx), SendOp::Send)
            .map_err(|(e, _)| e)
    }

    /// Posts `buf` (whose device the SRQ's is) to the SRQ again.
    fn repost(this: &Arc<Self>, buf: Buf) {
        let srq = this.srq.lock().clone();
        if let Some(srq) = srq {
            let _ = srq.post_recv(this, Ctx::Rx(buf));
        }
    }

    /// The verdict, once the last connection closed.
    fn verdict(this: &Arc<Self>) {
        let limit = this.srq.lock().as_ref().map_or(0, |s| s.limit_events());
        this.check(
            "srq_limit_event_came",
            if limit >= 1 { Ok(()) } else { Err(ERANGE) },
        );
        let stray = this.stray.load(Ordering::Acquire);
        this.check(
            "srq_receives_tagged",
            if stray == 0 { Ok(()) } else { Err(ERANGE) },
        );
        for (i, n) in this.echoed.iter().enumerate() {
            pr_info!(
                "# connection {}: {} messages echoed\n",
                i + 1,
                n.load(Ordering::Acquire)
            );
        }
        let t = this.tap.lock();
        pr_info!("1..{}\n", t.n);
        pr_info!("srq: {} passed, {} failed\n", t.passed, t.failed);
    }
}

impl WorkItem for SrqTest {
    type Pointer = Arc<SrqTest>;

    fn run(this: Arc<SrqTest>) {
        Self::verdict(&this);
    }
}

impl CmHandler for SrqTest {
    fn event(this: &Arc<Self>, id: &HandlerId<'_, Self>, event: &CmEvent) {
        match event.kind {
            CmEventKind::ConnectRequest => {
                if let Err(e) = Self::accept(this, id, event) {
                    pr_info!("# accepting failed: {:?}\n", e);
                    let _ = id.reject();
                }
            }
            CmEventKind::Established => pr_info!("# connection up\n"),
            CmEventKind::Disconnected => {
                // The connection goes here, in its own handler.
                let gone = {
                    let mut conns = this.conns.lock();
                    conns
                        .iter_mut()
                        .find(|c| c.as_ref().is_some_and(|c| c.is(id)))
                        .and_then(Option::take)
                };
                if gone.is_some() {
                    drop(gone);
                    let n = this.closed.fetch_add(1, Ordering::AcqRel) + 1;
                    pr_info!("# connection closed ({} so far)\n", n);
                    if n as usize == CONNS {
                        let _ = workqueue::system().enqueue(this.clone());
                    }
                }
            }
            _ => {}
        }
    }
}

impl CompletionHandler for SrqTest {
    type Ctx = Ctx;

    fn complete(this: &Arc<Self>, wc: &Wc, ctx: Ctx) {
        let buf = match ctx {
            Ctx::Rx(b) => b,
            // An echo went (or was flushed): its buffer goes.
            Ctx::Tx(_) | Ctx::Two(..) => return,
        };
        if !wc.ok() {
            // Flushed from a QP that went: the buffer goes back to the SRQ.
            Self::repost(this, buf);
            return;
        }
        let Some(tag) = wc.qp_tag() else {
            this.stray.fetch_add(1, Ordering::AcqRel);
            return;
        };
        let Some(dev_buf) = buf.take() else { return };
        let data = dev_buf.into_cpu();
        let len = (wc.byte_len as usize).min(data.len());
        match Self::echo(this, tag, &data[..len]) {
            Ok(()) => {
                if let Some(n) = this.echoed.get((tag as usize).wrapping_sub(1)) {
                    n.fetch_add(1, Ordering::AcqRel);
                }
            }
            Err(_) => {
                this.stray.fetch_add(1, Ordering::AcqRel);
            }
        }
        let buf = Buf::wrap(data.into_device());
        let release = {
            let mut held = this.held.lock();
            let limit = this.srq.lock().as_ref().map_or(0, |s| s.limit_events());
            if held.len() < HELD && limit == 0 {
                let _ = held.push(Some(buf), GFP_KERNEL);
                None
            } else {
                Some((buf, core::mem::take(&mut *held)))
            }
        };
        if let Some((buf, mut held)) = release {
            Self::repost(this, buf);
            for b in held.iter_mut() {
                if let Some(b) = b.take() {
                    Self::repost(this, b);
                }
            }
        }
    }
}

struct RdmaSrq {
    listener: Option<CmId<SrqTest>>,
    test: Arc<SrqTest>,
    _client: ClientRegistration<DevClient>,
}

impl kernel::Module for RdmaSrq {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let devices = Arc::pin_init(
            pin_init!(Devices {
                list <- new_mutex!(KVec::new()),
            }),
            GFP_KERNEL,
        )?;
        let client =
            ClientRegistration::new(module, c_str!("rdma_srq"), DevClient(devices.clone()))?;
        let mut conns = KVec::with_capacity(CONNS, GFP_KERNEL)?;
        for _ in 0..CONNS {
            conns.push(None, GFP_KERNEL)?;
        }
        let test = Arc::pin_init(
            pin_init!(SrqTest {
                devices,
                module,
                srq <- new_mutex!(None),
                conns <- new_mutex!(conns),
                held <- new_mutex!(KVec::new()),
                accepted: AtomicU32::new(0),
                closed: AtomicU32::new(0),
                echoed: [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
                stray: AtomicU32::new(0),
                tap <- new_mutex!(Tap::new()),
                work <- new_work!("rdma_srq"),
            }),
            GFP_KERNEL,
        )?;
        let mut listener = CmId::new(test.clone(), PortSpace::Tcp, module)?;
        listener.listen(&SockAddr::v4([0; 4], PORT), 4)?;
        pr_info!("listening on port {}\n", PORT);
        Ok(Self {
            listener: Some(listener),
            test,
            _client: client,
        })
    }
}

impl Drop for RdmaSrq {
    fn drop(&mut self) {
        drop(self.listener.take());
        let conns = core::mem::take(&mut *self.test.conns.lock());
        drop(conns);
        drop(core::mem::take(&mut *self.test.held.lock()));
        // The last holder of the SRQ: the receives still queued on it are
        // dropped with it, their buffers too.
        drop(self.test.srq.lock().take());
        pr_info!(
            "srq: {} buffers live at exit\n",
            LIVE.load(Ordering::Acquire)
        );
    }
}
