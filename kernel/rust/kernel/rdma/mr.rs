// SPDX-License-Identifier: GPL-2.0

//! Memory regions for fast registration (FRWR), and memory a remote peer
//! may access through one.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).
//!
//! A [`Region`] owns both the memory and the region that maps it, so that
//! no key ever names memory that was freed. It is registered, with the
//! access rights ([`Access`]) its owner grants, and invalidated by work
//! requests on a queue pair (`Qp::post_reg_mr()`, `Qp::post_local_inv()`).

use super::bindings;
use super::device::might_sleep;
use super::device::DeviceAttrs;
use super::dma::SharedBuf;
use super::pd::Pd;
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
};
use kernel::{
    error::{from_err_ptr, to_result},
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

/// Remote access rights of a memory region.
///
/// # Examples
///
/// ```
/// use kernel::{bindings, rdma::mr::Access};
///
/// let read = Access::REMOTE_READ;
/// assert_eq!(read.reg_flags(), bindings::ib_access_flags_IB_ACCESS_REMOTE_READ);
/// // A peer's WRITE makes the device store into the region: the
/// // registration needs local write access too.
/// let write = Access::REMOTE_WRITE.reg_flags();
/// assert_ne!(write & bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE, 0);
/// assert_eq!(Access::NONE.union(read), read);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access(u32);

impl Access {
    /// Peers may RDMA READ.
    pub const REMOTE_READ: Access = Access(bindings::ib_access_flags_IB_ACCESS_REMOTE_READ);
    /// Peers may RDMA WRITE.
    pub const REMOTE_WRITE: Access = Access(bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE);
    /// Peers may run atomics.
    pub const REMOTE_ATOMIC: Access = Access(bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC);
    /// No remote access.
    pub const NONE: Access = Access(0);

    /// Both sets of rights.
    pub const fn union(self, other: Access) -> Access {
        Access(self.0 | other.0)
    }

    /// The access flags of a registration granting these rights: local
    /// write only where a remote WRITE or atomic needs the device to store
    /// into the region (the verbs rule `ib_check_mr_access()` enforces).
    pub fn reg_flags(self) -> u32 {
        let stores = Self::REMOTE_WRITE.union(Self::REMOTE_ATOMIC).0;
        if self.0 & stores != 0 {
            self.0 | bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE
        } else {
            self.0
        }
    }
}

/// A fast-registration memory region (FRWR), deregistered on drop. Private:
/// only a [`Region`] has one, mapped on the memory the region owns.
///
/// # Invariants
///
/// `ptr` came from `ib_alloc_mr(IB_MR_TYPE_MEM_REG)` on `pd` and, while
/// `live`, is not deregistered (`dereg` clears it once). Its keys are written only by
/// [`Region::next_key`], with the region's mutex held, or through `&mut`.
struct Mr {
    ptr: NonNull<bindings::ib_mr>,
    pd: Arc<Pd>,
    live: AtomicBool,
}

// SAFETY: an MR may be used and freed from any thread; its keys change
// only under its region's mutex, its other fields only through `&mut self`.
unsafe impl Send for Mr {}
// SAFETY: `&Mr` only reads the address, which is fixed once mapped.
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
        // INVARIANT: allocated on `pd` just above.
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
            pd: pd.clone(),
            live: AtomicBool::new(true),
        })
    }

    /// Maps the first `len` bytes of `buf` at address `iova` in pages of
    /// `page` bytes (`iova` aligned to `page`; the offset of `buf`'s DMA
    /// address within a page carries over). The key moves on at each
    /// registration ([`Region::next_key`]).
    fn map(&mut self, buf: &SharedBuf, len: usize, iova: u64, page: usize) -> Result {
        if len == 0 || len > buf.len() || iova & (page as u64 - 1) != 0 {
            return Err(EINVAL);
        }
        // SAFETY: zero is a valid `scatterlist`.
        let mut sg: bindings::scatterlist = unsafe { core::mem::zeroed() };
        // SAFETY: `sg` is valid; the buffer is `len`+ bytes of linear-map
        // memory.
        unsafe { bindings::sg_init_one(&mut sg, buf.cpu_ptr().cast(), len as u32) };
        sg.dma_address = buf.dma_addr();
        // `sg_dma_len()`: its own field where the architecture has one, else
        // `length`, which `sg_init_one()` set to `len`.
        #[cfg(CONFIG_NEED_SG_DMA_LENGTH)]
        {
            sg.dma_length = len as u32;
        }
        let page_u32 = u32::try_from(page).map_err(|_| EINVAL)?;
        // SAFETY: the MR is valid (type invariant) and `sg` describes a
        // mapped buffer; one entry.
        let n = unsafe {
            bindings::ib_map_mr_sg(
                self.ptr.as_ptr(),
                &mut sg,
                1,
                core::ptr::null_mut(),
                page_u32,
            )
        };
        if n != 1 {
            return Err(if n < 0 { Error::from_errno(n) } else { EINVAL });
        }
        // SAFETY: the MR is valid and not registered, and `&mut self` keeps
        // every other access out.
        unsafe {
            let mr = self.ptr.as_ptr();
            (*mr).iova = iova | (buf.dma_addr() & (page as u64 - 1));
        }
        Ok(())
    }

    /// The keys, `(lkey, rkey)`.
    ///
    /// # Safety
    ///
    /// Nothing may write them meanwhile: the caller holds the region's
    /// mutex, or `&mut self`.
    unsafe fn keys(&self) -> (u32, u32) {
        let mr = self.ptr.as_ptr();
        // SAFETY: the MR is valid (type invariant); no writer (the caller).
        unsafe { ((*mr).lkey, (*mr).rkey) }
    }

    /// The address peers use for byte 0 of the mapping.
    fn iova(&self) -> u64 {
        // SAFETY: the MR is valid (type invariant); `iova` is written only
        // by `map`, through `&mut self`.
        unsafe { (*self.ptr.as_ptr()).iova }
    }

    /// Deregisters the MR, once. If the provider refuses, the key may stay
    /// valid: the MR and its PD are leaked (the caller leaks the memory).
    fn dereg(&self) -> Result {
        if !self.live.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        // SAFETY: allocated in `frwr`, not yet deregistered (`live`); owners
        // invalidate it, or destroy the QP, before dropping, and no request
        // naming it is pending (requests keep their own reference).
        let ret = unsafe { bindings::ib_dereg_mr(self.ptr.as_ptr()) };
        if ret != 0 {
            // ib_core still counts the MR on the PD: the PD must never be
            // deallocated. One count of it is leaked.
            core::mem::forget(self.pd.clone());
            pr_err!("ib_dereg_mr failed ({}): MR, PD and memory leaked\n", ret);
        }
        to_result(ret)
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        let _ = self.dereg();
    }
}

/// How a region of some length is registered on a device: the size of the
/// region's pages, how many of them its page list holds, and how many bytes
/// are allocated.
///
/// A fast registration maps at most `max_fast_reg_page_list_len` pages
/// (256 on siw), in a page size the device supports (`page_size_cap`), of
/// memory the DMA API can map in one piece (`dma_max_mapping_size()`: 256
/// KiB under swiotlb). The page size is the smallest that fits; above the
/// CPU's page size one more page is counted, as the buffer's DMA address
/// need not be aligned to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    page: usize,
    pages: u32,
    bytes: usize,
}

impl Layout {
    /// The layout of `len` bytes on a device with `attrs`; `EMSGSIZE` if
    /// the device cannot register that much in one region.
    pub fn of(attrs: &DeviceAttrs, len: usize) -> Result<Self> {
        if len == 0 {
            return Err(EINVAL);
        }
        if len as u64 > attrs.max_mr_size {
            return Err(EMSGSIZE);
        }
        let cpu_page = kernel::page::PAGE_SIZE;
        let mut page = cpu_page;
        while page != 0 {
            if attrs.page_size_cap & page as u64 != 0 {
                let bytes = len.checked_next_multiple_of(page).ok_or(EINVAL)?;
                if bytes > attrs.max_mapping {
                    break;
                }
                let pages = bytes / page + usize::from(page > cpu_page);
                if pages <= attrs.max_fast_reg_page_list_len as usize {
                    return Ok(Self {
                        page,
                        pages: u32::try_from(pages).map_err(|_| EINVAL)?,
                        bytes,
                    });
                }
            }
            page = page.checked_mul(2).unwrap_or(0);
        }
        Err(EMSGSIZE)
    }
}

/// The largest region, at most `cap` bytes, that a device with `attrs` can
/// register in one region ([`Layout::of`]); 0 if none.
///
/// # Examples
///
/// ```
/// use kernel::rdma::{device::DeviceAttrs, mr::max_region};
///
/// // A device that maps 256 pages of 4 KiB in one registration (siw).
/// let mut attrs = DeviceAttrs {
///     max_mr_size: u64::MAX,
///     max_qp_rd_atom: 0,
///     max_qp_init_rd_atom: 0,
///     atomic_cap: 0,
///     max_sge_rd: 1,
///     max_fast_reg_page_list_len: 256,
///     page_size_cap: 4096,
///     max_mapping: usize::MAX,
/// };
/// assert_eq!(max_region(&attrs, 4 << 20), 1 << 20);
/// // Behind swiotlb one streaming mapping holds at most 256 KiB.
/// attrs.max_mapping = 256 << 10;
/// assert_eq!(max_region(&attrs, 4 << 20), 256 << 10);
/// assert_eq!(max_region(&attrs, 1000), 1000);
/// ```
pub fn max_region(attrs: &DeviceAttrs, cap: usize) -> usize {
    // Whatever fits, anything shorter fits too: search for the boundary.
    let (mut lo, mut hi) = (0, cap);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if Layout::of(attrs, mid).is_ok() {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// Memory a remote peer may access, with the fast-registration region that
/// maps it.
///
/// The buffer is a [`SharedBuf`]: the device owns it for good, and the CPU
/// reaches it only by ranged copies ([`Region::read`], [`Region::write`]),
/// so nothing here hands out a reference to bytes the peer may be writing.
/// The region is registered and invalidated by work requests
/// (`Qp::post_reg_mr()`, `Qp::post_local_inv()`) that keep the whole region
/// alive until they complete.
///
/// The CPU's copies are serialized by the region's mutex, each with its
/// sync: a copy and its `sync_for_cpu` (read) or `sync_for_device` (write)
/// run as one. Two threads copying at once could otherwise interleave them:
/// under swiotlb a reader's `sync_for_cpu` copies the bounce slot, still
/// stale, over bytes a writer has just stored, and the writer's
/// `sync_for_device` then pushes those stale bytes to the device, so the
/// peer never sees the write; and two copies over the same bytes would be a
/// data race. The mutex is held for a copy between kernel buffers only,
/// never across a copy to or from user memory (callers bounce those).
///
/// A sync covers whole cache lines on a device that is not cache-coherent,
/// so a CPU write whose range starts or ends inside a cache line also writes
/// back the CPU's view of that line's other bytes: a peer's WRITE to those
/// bytes at the same moment may be lost. Consumers keep the bytes the CPU
/// writes and the bytes peers write whole cache lines apart.
///
/// # Examples
///
/// ```
/// use kernel::rdma::{mr::Region, pd::Pd};
/// use kernel::sync::Arc;
///
/// /// 64 KiB filled with `pattern`, for a peer to READ once a queue pair
/// /// registered it (`Qp::post_reg_mr()`): the consumer's protocol then
/// /// tells the peer the address and `region.rkey()`, the key of that
/// /// registration.
/// fn exposed(pd: &Arc<Pd>, pattern: u8) -> Result<(Arc<Region>, u64)> {
///     let region = Region::new(pd, 64 << 10, 0)?;
///     let chunk = [pattern; 256];
///     for off in (0..region.len()).step_by(chunk.len()) {
///         region.write(off, &chunk)?;
///     }
///     let addr = region.iova();
///     Ok((region, addr))
/// }
/// ```
///
/// # Invariants
///
/// `mr` maps the first `len` bytes of the buffer in `io`, which is `None`
/// only while the region is dropped. `keys` is `mr`'s keys, `lkey << 32 |
/// rkey`, written with `io` locked. The region is deregistered before the
/// buffer is unmapped and freed ([`PinnedDrop`]), so no key ever names freed
/// memory.
#[pin_data(PinnedDrop)]
pub struct Region {
    mr: Mr,
    #[pin]
    io: Mutex<Option<SharedBuf>>,
    keys: AtomicU64,
    len: usize,
}

impl Region {
    /// `len` zeroed bytes in whole pages on `pd`'s device, with a region
    /// mapping them at address `iova`; not yet registered. `iova` must be
    /// aligned to the registration's page size (`EINVAL` otherwise; 0 and
    /// multiples of 4 GiB always are). `EMSGSIZE` if the device cannot
    /// register `len` bytes ([`max_region`]). May sleep.
    pub fn new(pd: &Arc<Pd>, len: usize, iova: u64) -> Result<Arc<Self>> {
        might_sleep();
        let layout = Layout::of(&pd.device().attrs(), len)?;
        // Whole pages: kmalloc returns page-aligned memory for these sizes,
        // so the region's address is page-aligned too.
        let buf = SharedBuf::alloc(pd.device(), layout.bytes)?;
        let mut mr = Mr::frwr(pd, layout.pages)?;
        mr.map(&buf, len, iova, layout.page)?;
        // SAFETY: `mr` is ours alone (`&mut` would do).
        let (lkey, rkey) = unsafe { mr.keys() };
        // INVARIANT: `mr` maps `buf[..len]` (just above); `keys` is its keys.
        Arc::pin_init(
            pin_init!(Self {
                mr,
                io <- new_mutex!(Some(buf)),
                keys: AtomicU64::new(u64::from(lkey) << 32 | u64::from(rkey)),
                len,
            }),
            GFP_KERNEL,
        )
    }

    /// The remote key of the last registration posted
    /// ([`Qp::post_reg_mr`](super::qp::Qp::post_reg_mr)); before the first,
    /// a key no registration has made valid.
    pub fn rkey(&self) -> u32 {
        self.keys.load(Ordering::Acquire) as u32
    }

    /// The local key, for a request whose data lands in the region; it
    /// moves with [`Region::rkey`].
    pub fn lkey(&self) -> u32 {
        (self.keys.load(Ordering::Acquire) >> 32) as u32
    }

    /// Moves the keys on for a new registration (`ib_inc_rkey()`,
    /// `ib_update_fast_reg_key()`) and returns the new remote key.
    pub(super) fn next_key(&self) -> u32 {
        let _io = self.io.lock();
        let mr = self.mr.ptr.as_ptr();
        // SAFETY: the region's mutex is held, so nothing writes the keys.
        let (_, rkey) = unsafe { self.mr.keys() };
        // `ib_inc_rkey()`: the low byte is the consumer's.
        let next = (rkey & 0xffff_ff00) | (rkey.wrapping_add(1) & 0xff);
        // SAFETY: the MR is valid (type invariant of `Mr`); the mutex keeps
        // other key writers out, and readers use `keys`.
        unsafe { bindings::ib_update_fast_reg_key(mr, next as u8) };
        // SAFETY: as above.
        let (lkey, rkey) = unsafe { self.mr.keys() };
        // INVARIANT: the keys just written, with `io` locked.
        self.keys
            .store(u64::from(lkey) << 32 | u64::from(rkey), Ordering::Release);
        rkey
    }

    /// The PD the region is on.
    pub fn pd(&self) -> &Arc<Pd> {
        &self.mr.pd
    }

    /// The raw `struct ib_mr`, for a registration or invalidation request.
    pub(super) fn mr_raw(&self) -> *mut bindings::ib_mr {
        self.mr.ptr.as_ptr()
    }

    /// The address peers use for byte 0.
    pub fn iova(&self) -> u64 {
        self.mr.iova()
    }

    /// The bytes the peer can reach.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Copies the bytes at `off` into `dst` ([`SharedBuf::read`]), under
    /// the region's mutex; `EINVAL` past the region. May sleep.
    pub fn read(&self, off: usize, dst: &mut [u8]) -> Result {
        self.check(off, dst.len())?;
        self.io.lock().as_mut().ok_or(EINVAL)?.read(off, dst)
    }

    /// Copies `src` to the bytes at `off` ([`SharedBuf::write`]), under the
    /// region's mutex; `EINVAL` past the region. May sleep.
    pub fn write(&self, off: usize, src: &[u8]) -> Result {
        self.check(off, src.len())?;
        self.io.lock().as_mut().ok_or(EINVAL)?.write(off, src)
    }

    fn check(&self, off: usize, len: usize) -> Result {
        match off.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(EINVAL),
        }
    }
}

#[pinned_drop]
impl PinnedDrop for Region {
    fn drop(self: Pin<&mut Self>) {
        might_sleep();
        if self.mr.dereg().is_err() {
            // The key may still be valid: the memory is never freed nor
            // unmapped (nor is the device's reference it holds dropped).
            core::mem::forget(self.io.lock().take());
        }
    }
}
