// SPDX-License-Identifier: GPL-2.0

//! Windows: memory a remote peer may access, owned together with the
//! fast-registration region (FRWR) that lets it, and the access rights the
//! region is registered with.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::bindings;
use super::dma::SharedBuf;
use super::verbs::Pd;
use core::ptr::NonNull;
use kernel::{error::from_err_ptr, prelude::*, sync::Arc};

/// Remote access rights of a memory region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Access(u32);

impl Access {
    /// Peers may RDMA READ.
    pub(crate) const REMOTE_READ: Access = Access(bindings::ib_access_flags_IB_ACCESS_REMOTE_READ);
    /// Peers may RDMA WRITE.
    pub(crate) const REMOTE_WRITE: Access =
        Access(bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE);
    /// Peers may run atomics.
    pub(crate) const REMOTE_ATOMIC: Access =
        Access(bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC);
    /// No remote access.
    pub(crate) const NONE: Access = Access(0);

    /// Both sets of rights.
    pub(crate) const fn union(self, other: Access) -> Access {
        Access(self.0 | other.0)
    }

    /// The access flags of a registration granting these rights: local
    /// write only where a remote WRITE or atomic needs the device to store
    /// into the region (the verbs rule `ib_check_mr_access()` enforces).
    pub(super) fn reg_flags(self) -> u32 {
        let stores = Self::REMOTE_WRITE.union(Self::REMOTE_ATOMIC).0;
        if self.0 & stores != 0 {
            self.0 | bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE
        } else {
            self.0
        }
    }
}

/// A fast-registration memory region (FRWR), deregistered on drop. Private:
/// only a [`Window`] has one, mapped on the memory the window owns.
///
/// # Invariants
///
/// `ptr` came from `ib_alloc_mr(IB_MR_TYPE_MEM_REG)` on `_pd`.
struct Mr {
    ptr: NonNull<bindings::ib_mr>,
    _pd: Arc<Pd>,
}

// SAFETY: an MR may be used and freed from any thread; its fields change
// only through `&mut self`.
unsafe impl Send for Mr {}
// SAFETY: `&Mr` only reads the keys and the address.
unsafe impl Sync for Mr {}

impl Mr {
    /// Allocates a region able to map `max_pages` pages.
    fn frwr(pd: &Arc<Pd>, max_pages: u32) -> Result<Self> {
        // SAFETY: the PD is valid.
        let ptr = from_err_ptr(unsafe {
            bindings::ib_alloc_mr(
                pd.as_raw(),
                bindings::ib_mr_type_IB_MR_TYPE_MEM_REG,
                max_pages,
            )
        })?;
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
            _pd: pd.clone(),
        })
    }

    /// Maps the first `len` bytes of `buf` at address `iova` (whose offset
    /// within a page must equal `buf`'s, so a page-aligned buffer takes a
    /// page-aligned `iova`), and moves the key to a fresh value, so no key
    /// of an earlier registration stays valid.
    fn map(&mut self, buf: &SharedBuf, len: usize, iova: u64) -> Result {
        if len == 0 || len > buf.len() {
            return Err(EINVAL);
        }
        // SAFETY: zero is a valid `scatterlist`.
        let mut sg: bindings::scatterlist = unsafe { core::mem::zeroed() };
        // SAFETY: `sg` is valid; the buffer is `len`+ bytes of linear-map
        // memory.
        unsafe { bindings::sg_init_one(&mut sg, buf.cpu_ptr().cast(), len as u32) };
        sg.dma_address = buf.dma_addr();
        sg.dma_length = len as u32;
        let page = kernel::page::PAGE_SIZE as u32;
        // SAFETY: the MR is valid (type invariant) and `sg` describes a
        // mapped buffer; one entry.
        let n = unsafe {
            bindings::ib_map_mr_sg(self.ptr.as_ptr(), &mut sg, 1, core::ptr::null_mut(), page)
        };
        if n != 1 {
            return Err(if n < 0 { Error::from_errno(n) } else { EINVAL });
        }
        // SAFETY: the MR is valid and not registered (we hold `&mut`).
        unsafe {
            let mr = self.ptr.as_ptr();
            (*mr).iova = iova | (buf.dma_addr() & (page as u64 - 1));
            let key = ((*mr).rkey as u8).wrapping_add(1);
            bindings::rkrust_ib_update_fast_reg_key(mr, key);
        }
        Ok(())
    }

    /// The remote key.
    fn rkey(&self) -> u32 {
        // SAFETY: the MR is valid (type invariant).
        unsafe { (*self.ptr.as_ptr()).rkey }
    }

    /// The local key (a fast-registration region's keys move together).
    fn lkey(&self) -> u32 {
        // SAFETY: the MR is valid (type invariant).
        unsafe { (*self.ptr.as_ptr()).lkey }
    }

    /// The address peers use for byte 0 of the mapping.
    fn iova(&self) -> u64 {
        // SAFETY: the MR is valid (type invariant).
        unsafe { (*self.ptr.as_ptr()).iova }
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: allocated in `frwr`; owners invalidate it, or destroy the QP,
        // before dropping, and no request naming it is pending (requests keep
        // their own reference).
        unsafe { bindings::rkrust_ib_dereg_mr(self.ptr.as_ptr()) };
    }
}

/// Memory a remote peer may access, and the region that lets it: a window.
///
/// The buffer is a [`SharedBuf`]: the device owns it for good, and the CPU
/// reaches it only by ranged copies ([`Window::read`], [`Window::write`]),
/// so nothing here hands out a reference to bytes the peer may be writing.
/// The region is registered and invalidated by work requests
/// ([`Qp::post_reg_mr`], [`Qp::post_local_inv`]) that keep the whole window
/// alive until they complete.
///
/// # Invariants
///
/// `mr` maps the first `len` bytes of `buf`. Fields drop in declaration
/// order: the region is deregistered before the buffer is unmapped and
/// freed, so no key ever names freed memory.
pub(crate) struct Window {
    mr: Mr,
    buf: SharedBuf,
    len: usize,
}

impl Window {
    /// `len` zeroed bytes in whole pages on `pd`'s device, with a region
    /// mapping them at address `iova` (page-aligned) under a fresh key; not
    /// yet registered.
    pub(crate) fn new(pd: &Arc<Pd>, len: usize, iova: u64) -> Result<Self> {
        let page = kernel::page::PAGE_SIZE;
        let pages = len.div_ceil(page);
        let bytes = pages.checked_mul(page).ok_or(EINVAL)?;
        // Whole pages: kmalloc returns page-aligned memory for these sizes,
        // so the window's address is page-aligned too.
        let buf = SharedBuf::alloc(pd.device(), bytes)?;
        let mut mr = Mr::frwr(pd, u32::try_from(pages).map_err(|_| EINVAL)?)?;
        mr.map(&buf, len, iova)?;
        // INVARIANT: `mr` maps `buf[..len]` (just above).
        Ok(Self { mr, buf, len })
    }

    /// The remote key.
    pub(crate) fn rkey(&self) -> u32 {
        self.mr.rkey()
    }

    /// The local key, for a request whose data lands in the window.
    pub(crate) fn lkey(&self) -> u32 {
        self.mr.lkey()
    }

    /// The region, for a registration or invalidation request only.
    pub(super) fn mr_raw(&self) -> *mut bindings::ib_mr {
        self.mr.ptr.as_ptr()
    }

    /// The address peers use for byte 0.
    pub(crate) fn iova(&self) -> u64 {
        self.mr.iova()
    }

    /// The bytes the peer can reach.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Copies the bytes at `off` into `dst` ([`SharedBuf::read`]);
    /// `EINVAL` past the window.
    pub(crate) fn read(&self, off: usize, dst: &mut [u8]) -> Result {
        self.check(off, dst.len())?;
        self.buf.read(off, dst)
    }

    /// Copies `src` to the bytes at `off` ([`SharedBuf::write`]); `EINVAL`
    /// past the window.
    pub(crate) fn write(&self, off: usize, src: &[u8]) -> Result {
        self.check(off, src.len())?;
        self.buf.write(off, src)
    }

    fn check(&self, off: usize, len: usize) -> Result {
        match off.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(EINVAL),
        }
    }
}
