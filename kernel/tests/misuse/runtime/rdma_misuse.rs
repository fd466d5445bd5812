// SPDX-License-Identifier: GPL-2.0

//! Run-time misuse checks of `kernel::rdma`: what the types cannot rule
//! out must be refused with an errno, from safe code.
//!
//! The module listens on port 7471 of every address. It drops the child
//! of the first connection request inside the request's handler, which
//! rejects it (before, that drop deadlocked in `rdma_destroy_id()`). It
//! then takes three connections, one after the other. The first is accepted with an
//! initiator depth of 0, and its one check is that a READ and an atomic are
//! refused on it; the second is accepted with a depth of 1, and most
//! checks run on its queue pair, whose CQ this module reaps itself; the
//! third's CQ is reaped by ib_core's workqueue, and a completion handler
//! drops the connection. Each connection's checks run in a work item once
//! it is up, and end it. The checks print KTAP (`ok N name`,
//! `not ok N name`) and a closing `misuse: N passed, N failed` line to the
//! kernel log. A second RDMA device, if present, is the "other" device of
//! the cross-device checks; without one they are skipped. No `unsafe` in
//! this file.

mod ktap;
use ktap::{expect_err, expect_errno, Tap};

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::prelude::*;
use kernel::{
    c_str, new_condvar, new_mutex,
    rdma::{
        cm::{CmEvent, CmEventKind, CmHandler, CmId, ConnParam, HandlerId, PortSpace, SockAddr},
        cq::{Cq, PollContext},
        device::{Client, ClientRegistration, Device, DeviceRef},
        dma::{DeviceBuf, Direction},
        mr::{Access, Region},
        pd::Pd,
        qp::{QpCaps, SendOp},
        wc::Wc,
        work::{CompletionHandler, SgeList, WorkCtx, MAX_SGE},
    },
    str::CStr,
    sync::{Arc, CondVar, Mutex},
    time::msecs_to_jiffies,
    workqueue::{self, impl_has_work, new_work, Work, WorkItem},
};

module! {
    type: RdmaMisuse,
    name: "rdma_misuse",
    author: "rdma-krust developers",
    description: "kernel::rdma misuse checks (test only)",
    license: "GPL",
}

const PORT: u16 = 7471;
const OWNER: &CStr = c_str!("rdma_misuse");
const CHECKS: u32 = 12;

/// A READ and a fetch-and-add of nowhere: the checks that post them
/// expect a refusal before the peer is ever asked.
const READ: SendOp = SendOp::Read {
    remote_addr: 0,
    rkey: 0,
};
const FADD: SendOp = SendOp::FetchAdd {
    remote_addr: 0,
    rkey: 0,
    add: 1,
};

/// The devices present, for the cross-device checks.
#[pin_data]
struct Devices {
    #[pin]
    list: Mutex<KVec<Option<DeviceRef>>>,
}

/// The `ib_client` that keeps [`Devices`].
struct DevClient(Arc<Devices>);

impl Client for DevClient {
    type DeviceData = ();

    fn add(&self, dev: &Device) -> Result {
        let r = dev.try_get().ok_or(ENODEV)?;
        self.0.list.lock().push(Some(r), GFP_KERNEL)?;
        Ok(())
    }

    fn remove(&self, dev: &Device, _data: ()) {
        let gone = {
            let mut list = self.0.list.lock();
            list.iter_mut()
                .find(|d| d.as_ref().is_some_and(|d| d.index() == dev.index()))
                .and_then(Option::take)
        };
        drop(gone);
    }
}

kernel::rdma_client_slot!(DevClient);

/// What a posted request carries.
enum Ctx {
    /// No buffer (registrations, invalidations).
    None,
    /// One buffer.
    Buf(DeviceBuf),
    /// A list whose length changes from one call of `sges` to the next.
    Fickle {
        calls: AtomicU32,
        bufs: [DeviceBuf; MAX_SGE],
    },
}

impl WorkCtx for Ctx {
    fn sges(&self) -> SgeList<'_> {
        match self {
            Ctx::None => SgeList::new(),
            Ctx::Buf(b) => SgeList::one(b, b.len()),
            Ctx::Fickle { calls, bufs } => {
                let first = calls.fetch_add(1, Ordering::Relaxed) == 0;
                let mut list = SgeList::one(&bufs[0], bufs[0].len());
                if !first {
                    for b in &bufs[1..] {
                        let _ = list.push(b, b.len());
                    }
                }
                list
            }
        }
    }
}

/// Completions seen, and what `fail_qp` answered after the owner went.
struct Reaped {
    done: u32,
    failed: u32,
    fail_qp_after_drop: KVec<i32>,
    /// The owner is being dropped, and then gone.
    dropped: bool,
    gone: bool,
}

#[pin_data]
struct Misuse {
    devices: Arc<Devices>,
    /// The accepted connection, until the last check drops it.
    #[pin]
    child: Mutex<Option<CmId<Misuse>>>,
    /// Its CQ, reaped here (direct).
    #[pin]
    cq: Mutex<Option<Arc<Cq>>>,
    #[pin]
    reaped: Mutex<Reaped>,
    #[pin]
    finished: Mutex<bool>,
    #[pin]
    cv: CondVar,
    /// `ok`/`not ok` of the CQ check made while accepting.
    #[pin]
    cq_check: Mutex<Option<Result>>,
    /// Connection requests so far.
    requests: AtomicU32,
    /// Connections accepted so far.
    conns: AtomicU32,
    /// The results so far, across the two connections.
    #[pin]
    tap: Mutex<Tap>,
    #[pin]
    work: Work<Misuse>,
}

impl_has_work! {
    impl HasWork<Self> for Misuse { self.work }
}

impl Misuse {
    /// The QP's capacities: one SGE a receive, so that a second entry is
    /// refused.
    const CAPS: QpCaps = QpCaps {
        send_wr: 8,
        recv_wr: 8,
        send_sge: 1,
        recv_sge: 1,
        max_inline: 0,
    };

    fn accept(this: &Arc<Self>, req: &HandlerId<'_, Self>, ev: &CmEvent) -> Result {
        let nr = this.conns.fetch_add(1, Ordering::AcqRel) + 1;
        let first = nr == 1;
        let mut id = req.adopt()?;
        let dev = id.device().ok_or(ENODEV)?;
        let pd = Arc::new(Pd::new(&dev, OWNER)?, GFP_KERNEL)?;
        let need = Self::CAPS.cq_entries()?;
        // A CQ one entry short of the QP's needs is refused.
        let small = Arc::new(
            Cq::new(&dev, need - 1, None, PollContext::Direct, OWNER)?,
            GFP_KERNEL,
        )?;
        *this.cq_check.lock() = Some(expect_errno(
            id.create_qp_on(&pd, &small, Self::CAPS).map(|_| ()),
            ENOSPC,
        ));
        drop(small);
        // The third connection's completions run on ib_core's workqueue.
        let poll = if nr == 3 {
            PollContext::Workqueue
        } else {
            PollContext::Direct
        };
        let cq = Arc::new(Cq::new(&dev, need, None, poll, OWNER)?, GFP_KERNEL)?;
        id.create_qp_on(&pd, &cq, Self::CAPS)?;
        // The peer sends one byte once connected: its receive is posted
        // before the accept. (iWARP has no RNR retry: on siw a SEND that
        // finds no receive ends the connection, and with it the checks.)
        let buf = DeviceBuf::alloc(&dev, 64, Direction::FromDevice)?;
        id.qp()
            .ok_or(ENODEV)?
            .post_recv(this, Ctx::Buf(buf))
            .map_err(|(e, _)| e)?;
        *this.cq.lock() = Some(cq);
        *this.child.lock() = Some(id);
        let param = ConnParam {
            rnr_retry_count: 7,
            responder_resources: ev.responder_resources.min(1),
            // The first connection issues no READ or atomic: 0, as
            // `ConnParam::default()` has it.
            initiator_depth: if first { 0 } else { ev.initiator_depth.min(1) },
            ..ConnParam::default()
        };
        req.accept(&param)
    }

    /// Posts a buffer of `len` bytes on `dev`, mapped `dir`, as a receive
    /// (`op` is `None`) or as the source or sink of `op`; `Ok` if the post
    /// is refused with `EINVAL`.
    fn refused(
        this: &Arc<Self>,
        dev: &DeviceRef,
        len: usize,
        dir: Direction,
        op: Option<SendOp>,
    ) -> Result {
        let ctx = Ctx::Buf(DeviceBuf::alloc(dev, len, dir)?);
        let posted = this.with_qp(|qp| {
            Ok(match op {
                None => qp.post_recv(this, ctx),
                Some(op) => qp.post_send(this, ctx, op),
            })
        })?;
        expect_err(posted, EINVAL)
    }

    /// A region on a PD of its own on `dev` (so not the QP's), whose
    /// registration on the QP must be refused with `EINVAL`; returned for
    /// the caller's further requests.
    fn foreign_region_refused(this: &Arc<Self>, dev: &DeviceRef) -> Result<Arc<Region>> {
        let pd = Arc::new(Pd::new(dev, OWNER)?, GFP_KERNEL)?;
        let region = Region::new(&pd, 4096, 0)?;
        let posted =
            this.with_qp(|qp| Ok(qp.post_reg_mr(this, Ctx::None, &region, Access::REMOTE_READ)))?;
        expect_err(posted, EINVAL)?;
        Ok(region)
    }

    /// Records a check's result. The results' mutex is held for this only:
    /// never across a call that may wait for an rdma_cm handler (which
    /// takes it here too, under rdma_cm's handler mutexes).
    fn check(&self, name: &str, r: Result) {
        self.tap.lock().check(name, r);
    }

    /// Reaps the CQ until `want` completions were seen in all.
    fn reap_until(&self, want: u32) -> Result {
        let cq = self.cq.lock().clone().ok_or(ENODEV)?;
        for _ in 0..1000 {
            cq.process_direct(16)?;
            if self.reaped.lock().done >= want {
                return Ok(());
            }
            let mut f = self.finished.lock();
            let _ = self
                .cv
                .wait_interruptible_timeout(&mut f, msecs_to_jiffies(10));
        }
        Err(EAGAIN)
    }

    /// Posts with the connection's QP.
    fn with_qp<T>(&self, f: impl FnOnce(&kernel::rdma::qp::Qp) -> Result<T>) -> Result<T> {
        let child = self.child.lock();
        let qp = child.as_ref().and_then(|c| c.qp()).ok_or(ENODEV)?;
        f(qp)
    }

    /// The first connection's check: accepted with an initiator depth of
    /// 0, its QP may issue no READ or atomic, and posting one is refused
    /// rather than left to stall.
    fn run_first(this: &Arc<Self>) {
        let r = (|| {
            let dev = this.with_qp(|qp| Ok(qp.pd().device().clone()))?;
            Self::refused(this, &dev, 64, Direction::FromDevice, Some(READ))?;
            Self::refused(this, &dev, 8, Direction::FromDevice, Some(FADD))
        })();
        this.check("read_without_initiator_depth_refused", r);
        let child = this.child.lock().take();
        drop(child);
        *this.cq.lock() = None;
        pr_info!("# connection 1 done\n");
    }

    fn run_checks(this: &Arc<Self>) {
        let r = this.cq_check.lock().take().unwrap_or(Err(ENOENT));
        this.check("cq_too_small_refused", r);

        let dev = match this.with_qp(|qp| Ok(qp.pd().device().clone())) {
            Ok(d) => d,
            Err(e) => {
                let tap = this.tap.lock();
                pr_info!(
                    "not ok {} no connection # errno {}\n",
                    tap.n + 1,
                    e.to_errno()
                );
                pr_info!("misuse: {} passed, {} failed\n", tap.passed, tap.failed + 1);
                return;
            }
        };

        // The peer's byte, in the receive posted before the accept: the
        // connection works before it is misused.
        let r = (|| {
            let base = this.reaped.lock().done;
            this.reap_until(base + 1)?;
            let r = this.reaped.lock();
            if r.failed != 0 || r.dropped {
                return Err(EIO);
            }
            Ok(())
        })();
        this.check("peer_message_received", r);

        // One call of `sges`, one entry: posted, not refused by the
        // provider for the four entries a second call would list.
        let r = (|| {
            let bufs = [
                DeviceBuf::alloc(&dev, 64, Direction::FromDevice)?,
                DeviceBuf::alloc(&dev, 64, Direction::FromDevice)?,
                DeviceBuf::alloc(&dev, 64, Direction::FromDevice)?,
                DeviceBuf::alloc(&dev, 64, Direction::FromDevice)?,
            ];
            let ctx = Ctx::Fickle {
                calls: AtomicU32::new(0),
                bufs,
            };
            this.with_qp(|qp| qp.post_recv(this, ctx).map_err(|(e, _)| e))
        })();
        this.check("sges_listed_once", r);

        // Buffers mapped the wrong way for the request.
        let r = (|| {
            Self::refused(this, &dev, 64, Direction::ToDevice, None)?;
            Self::refused(this, &dev, 64, Direction::FromDevice, Some(SendOp::Send))?;
            Self::refused(this, &dev, 64, Direction::ToDevice, Some(READ))?;
            Self::refused(this, &dev, 8, Direction::ToDevice, Some(FADD))
        })();
        this.check("wrong_direction_refused", r);

        // A region of another PD, on the same device.
        let r = (|| {
            let region = Self::foreign_region_refused(this, &dev)?;
            expect_err(
                this.with_qp(|qp| Ok(qp.post_local_inv(this, Ctx::None, &region)))?,
                EINVAL,
            )?;
            expect_err(
                this.with_qp(|qp| {
                    Ok(qp.post_read_into(this, Ctx::None, &region, 64, 0, 0, false))
                })?,
                EINVAL,
            )
        })();
        this.check("foreign_pd_region_refused", r);

        // A buffer and a region of another device.
        let other = this
            .devices
            .list
            .lock()
            .iter()
            .flatten()
            .find(|d| d.index() != dev.index())
            .cloned();
        match other {
            None => this
                .tap
                .lock()
                .skip("foreign_device_buffer_refused", "one RDMA device"),
            Some(other) => {
                let r = (|| {
                    Self::refused(this, &other, 64, Direction::FromDevice, None)?;
                    Self::refused(this, &other, 64, Direction::ToDevice, Some(SendOp::Send))?;
                    Self::foreign_region_refused(this, &other).map(drop)
                })();
                this.check("foreign_device_buffer_refused", r);
            }
        }

        // Registering a region again after invalidating it moves
        // its key on.
        let r = (|| {
            let pd = this.with_qp(|qp| Ok(qp.pd().clone()))?;
            let region = Region::new(&pd, 4096, 0)?;
            let base = this.reaped.lock().done;
            this.with_qp(|qp| {
                qp.post_reg_mr(this, Ctx::None, &region, Access::REMOTE_READ)
                    .map_err(|(e, _)| e)
            })?;
            this.reap_until(base + 1)?;
            let k1 = region.rkey();
            this.with_qp(|qp| {
                qp.post_local_inv(this, Ctx::None, &region)
                    .map_err(|(e, _)| e)
            })?;
            this.reap_until(base + 2)?;
            this.with_qp(|qp| {
                qp.post_reg_mr(this, Ctx::None, &region, Access::REMOTE_READ)
                    .map_err(|(e, _)| e)
            })?;
            this.reap_until(base + 3)?;
            let k2 = region.rkey();
            if this.reaped.lock().failed != 0 {
                return Err(EIO);
            }
            if k2 == k1 || k2 & 0xff != k1.wrapping_add(1) & 0xff {
                pr_info!("# keys {:#x} then {:#x}\n", k1, k2);
                return Err(ERANGE);
            }
            Ok(())
        })();
        this.check("reregistration_moves_rkey", r);

        // A handler drops the last owner of the QP while later
        // completions of the same polled batch still name it; their
        // `fail_qp` must find it gone.
        let r = (|| {
            for _ in 0..3 {
                let buf = DeviceBuf::alloc(&dev, 64, Direction::FromDevice)?;
                this.with_qp(|qp| qp.post_recv(this, Ctx::Buf(buf)).map_err(|(e, _)| e))?;
            }
            this.with_qp(|qp| qp.fail())?;
            // The flushed completions reach the CQ from the provider's
            // own context: all of them, before one batch is polled.
            {
                let mut f = this.finished.lock();
                let _ = this
                    .cv
                    .wait_interruptible_timeout(&mut f, msecs_to_jiffies(300));
            }
            let cq = this.cq.lock().clone().ok_or(ENODEV)?;
            for _ in 0..100 {
                cq.process_direct(16)?;
                if this.child.lock().is_none() {
                    break;
                }
            }
            let reaped = this.reaped.lock();
            // Completions of the batch after the drop found the QP gone.
            for e in reaped.fail_qp_after_drop.iter() {
                pr_info!("# fail_qp after the drop: {}\n", e);
            }
            if !reaped.gone || reaped.fail_qp_after_drop.is_empty() {
                return Err(ENOENT);
            }
            if reaped
                .fail_qp_after_drop
                .iter()
                .all(|&e| e == ENODEV.to_errno())
            {
                Ok(())
            } else {
                Err(ERANGE)
            }
        })();
        this.check("fail_qp_after_owner_dropped", r);

        // Whatever is left of the connection goes now.
        let child = this.child.lock().take();
        drop(child);
        *this.cq.lock() = None;
        pr_info!("# connection 2 done\n");
    }

    /// The third connection's check: its CQ is reaped by ib_core's
    /// workqueue, and a completion handler drops the connection's last
    /// owner. Draining the QP there would wait for the completions of the
    /// drain's markers, which that very work item delivers: the drop must
    /// return at once, the connection ended by another work item.
    fn run_third(this: &Arc<Self>) {
        let r = (|| {
            let dev = this.with_qp(|qp| Ok(qp.pd().device().clone()))?;
            let buf = DeviceBuf::alloc(&dev, 64, Direction::FromDevice)?;
            this.with_qp(|qp| qp.post_recv(this, Ctx::Buf(buf)).map_err(|(e, _)| e))?;
            // The receive completes, flushed, on the workqueue, where the
            // handler drops the connection (`complete`).
            this.with_qp(|qp| qp.fail())?;
            let mut done = this.finished.lock();
            for _ in 0..100 {
                if *done {
                    return Ok(());
                }
                let _ = this
                    .cv
                    .wait_interruptible_timeout(&mut done, msecs_to_jiffies(100));
            }
            Err(EAGAIN)
        })();
        this.check("drop_in_workqueue_completion_handler", r);
        let mut tap = this.tap.lock();
        let ran = if tap.n + 1 == CHECKS {
            Ok(())
        } else {
            Err(ERANGE)
        };
        tap.check("checks_ran", ran);
        pr_info!("misuse: {} passed, {} failed\n", tap.passed, tap.failed);
    }
}

impl WorkItem for Misuse {
    type Pointer = Arc<Misuse>;

    fn run(this: Arc<Misuse>) {
        match this.conns.load(Ordering::Acquire) {
            1 => Self::run_first(&this),
            2 => Self::run_checks(&this),
            _ => Self::run_third(&this),
        }
    }
}

impl CmHandler for Misuse {
    fn event(this: &Arc<Self>, id: &HandlerId<'_, Self>, event: &CmEvent) {
        match event.kind {
            CmEventKind::ConnectRequest => {
                if this.child.lock().is_some() {
                    return; // one connection at a time: not adopted, rejected
                }
                if this.requests.fetch_add(1, Ordering::AcqRel) == 0 {
                    // The child, adopted, dropped in its own request
                    // handler, where `rdma_destroy_id()` would wait for the
                    // handler itself. It is destroyed (and the request
                    // rejected) when the handler returns.
                    pr_info!("KTAP version 1\n");
                    pr_info!("1..{}\n", CHECKS);
                    let r = id.adopt().map(drop);
                    this.check("adopted_child_dropped_in_request_handler", r);
                    return;
                }
                if let Err(e) = Self::accept(this, id, event) {
                    pr_info!("# accepting failed: {:?}\n", e);
                    let child = this.child.lock().take();
                    if let Some(child) = child {
                        let _ = id.reject();
                        id.disown(child);
                    }
                }
            }
            CmEventKind::Established => {
                let _ = workqueue::system().enqueue(this.clone());
            }
            _ => {}
        }
    }
}

impl CompletionHandler for Misuse {
    type Ctx = Ctx;

    fn complete(this: &Arc<Self>, wc: &Wc, _ctx: Ctx) {
        let conn = this.conns.load(Ordering::Acquire);
        if conn == 1 {
            // The first connection's receive, flushed when it is dropped:
            // nothing of the second's checks.
            return;
        }
        if conn == 3 {
            if wc.flushed() {
                // On ib_core's workqueue: the connection's last owner goes
                // here. Before the fix this drop hung, draining the QP.
                let child = this.child.lock().take();
                drop(child);
                pr_info!("# dropped in a completion handler\n");
                *this.finished.lock() = true;
                this.cv.notify_all();
            }
            return;
        }
        let drop_now = {
            let mut r = this.reaped.lock();
            r.done += 1;
            if !wc.ok() && !wc.flushed() {
                pr_info!("# a completion failed: {}\n", wc.status_msg());
                r.failed += 1;
            }
            if wc.flushed() && !r.dropped {
                r.dropped = true;
                true
            } else {
                if r.gone {
                    let e = match wc.fail_qp() {
                        Ok(()) => 0,
                        Err(e) => e.to_errno(),
                    };
                    let _ = r.fail_qp_after_drop.push(e, GFP_KERNEL);
                }
                false
            }
        };
        if drop_now {
            // The last owner of the QP, dropped inside the batch: drains
            // and destroys the QP.
            let child = this.child.lock().take();
            drop(child);
            this.reaped.lock().gone = true;
        }
    }
}

struct RdmaMisuse {
    listener: Option<CmId<Misuse>>,
    misuse: Arc<Misuse>,
    _client: ClientRegistration<DevClient>,
}

impl kernel::Module for RdmaMisuse {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let devices = Arc::pin_init(
            pin_init!(Devices {
                list <- new_mutex!(KVec::new()),
            }),
            GFP_KERNEL,
        )?;
        let client =
            ClientRegistration::new(module, c_str!("rdma_misuse"), DevClient(devices.clone()))?;
        let misuse = Arc::pin_init(
            pin_init!(Misuse {
                devices,
                child <- new_mutex!(None),
                cq <- new_mutex!(None),
                reaped <- new_mutex!(Reaped {
                    done: 0,
                    failed: 0,
                    fail_qp_after_drop: KVec::new(),
                    dropped: false,
                    gone: false,
                }),
                finished <- new_mutex!(false),
                cv <- new_condvar!(),
                cq_check <- new_mutex!(None),
                requests: AtomicU32::new(0),
                conns: AtomicU32::new(0),
                tap <- new_mutex!(Tap::new()),
                work <- new_work!("rdma_misuse"),
            }),
            GFP_KERNEL,
        )?;
        let mut listener = CmId::new(misuse.clone(), PortSpace::Tcp, module)?;
        listener.listen(&SockAddr::v4([0; 4], PORT), 1)?;
        pr_info!("listening on port {}\n", PORT);
        Ok(Self {
            listener: Some(listener),
            misuse,
            _client: client,
        })
    }
}

impl Drop for RdmaMisuse {
    fn drop(&mut self) {
        drop(self.listener.take());
        let child = self.misuse.child.lock().take();
        drop(child);
        *self.misuse.cq.lock() = None;
    }
}
