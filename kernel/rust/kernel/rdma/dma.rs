// SPDX-License-Identifier: GPL-2.0

//! DMA-mapped buffers whose owner, CPU or device, is part of the type.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)
//! (`ib_dma_*`). The streaming DMA API hands a mapped buffer back and forth:
//! after `ib_dma_map_single()` the device owns it; the CPU may touch it only
//! after `ib_dma_sync_single_for_cpu()`, and must give it back with
//! `ib_dma_sync_single_for_device()` before the device uses it again.
//!
//! Here that is two types. [`DeviceBuf`] is what a work request may point
//! at; it has no way to reach the bytes. [`CpuBuf`] derefs to the bytes and has
//! no DMA address. The only ways between them are [`DeviceBuf::into_cpu`] and
//! [`CpuBuf::into_device`], which do the sync. A missing sync is therefore a
//! type error, which matters because the software providers (rxe, siw)
//! make the syncs no-ops, so no test on them could catch one.
//!
//! Memory a remote peer may write at any time (exposed for RDMA WRITE or
//! atomics) fits neither: the device never gives it back. [`SharedBuf`] is
//! that third kind. It is never seen through a Rust reference; the CPU
//! reaches it only by copies through raw pointers of a given range, each
//! with a sync of exactly that range: for the CPU before reading, for the
//! device after writing, and nothing else. So no sync ever copies a stale
//! CPU view over what the peer wrote (under swiotlb, `sync_for_device`
//! copies the CPU's bytes over the bounce buffer the device writes).

use super::bindings;
use super::device::DeviceRef;
use core::ops::{Deref, DerefMut};
use kernel::prelude::*;

/// Which way data moves between memory and the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// The device reads (SEND source, RDMA WRITE source).
    ToDevice,
    /// The device writes (RECV target, RDMA READ target, atomic result).
    FromDevice,
    /// Both (memory a remote peer may read and write).
    Bidirectional,
}

impl Direction {
    /// Whether the device may read memory mapped this way: a SEND's or an
    /// RDMA WRITE's source.
    pub fn device_reads(self) -> bool {
        self != Direction::FromDevice
    }

    /// Whether the device may write memory mapped this way: a receive's,
    /// an RDMA READ's or an atomic's sink.
    pub fn device_writes(self) -> bool {
        self != Direction::ToDevice
    }

    fn raw(self) -> bindings::dma_data_direction {
        match self {
            Direction::ToDevice => bindings::dma_data_direction_DMA_TO_DEVICE,
            Direction::FromDevice => bindings::dma_data_direction_DMA_FROM_DEVICE,
            Direction::Bidirectional => bindings::dma_data_direction_DMA_BIDIRECTIONAL,
        }
    }
}

/// The mapping itself; unmapped on drop, or by [`Mapping::unmap`].
///
/// # Invariants
///
/// While `buf` is not empty, `addr` is the mapping of `buf` (`buf.len()`
/// bytes) on `dev` in `dir`; `buf` is kmalloc memory (linear map), never
/// vmalloc. Once unmapped, `buf` is empty.
struct Mapping {
    dev: DeviceRef,
    buf: KVec<u8>,
    addr: u64,
    dir: Direction,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // Empty once `unmap` has unmapped it (type invariant).
        if !self.buf.is_empty() {
            self.unmap_dma();
        }
    }
}

/// A mapped buffer the device owns: it can be posted, not read or written.
///
/// # Examples
///
/// A receive buffer's round trip: posted while the device owns it, read
/// once the completion came and the CPU owns it, then given back.
///
/// ```
/// use kernel::rdma::{
///     device::DeviceRef,
///     dma::{CpuBuf, DeviceBuf, Direction},
/// };
///
/// fn receive_buffer(dev: &DeviceRef) -> Result<DeviceBuf> {
///     // Zeroed kmalloc memory, mapped: the device owns it.
///     let buf = DeviceBuf::alloc(dev, 4096, Direction::FromDevice)?;
///     // An SGE names `buf.dma_addr()` and `buf.len()`; the CPU cannot
///     // reach the bytes while the receive is posted.
///     Ok(buf)
/// }
///
/// fn completed(buf: DeviceBuf, byte_len: usize) -> DeviceBuf {
///     // `ib_dma_sync_single_for_cpu()`: now the bytes may be read.
///     let cpu: CpuBuf = buf.into_cpu();
///     let _first = cpu.get(..byte_len.min(cpu.len()));
///     // `ib_dma_sync_single_for_device()`: ready to post again.
///     cpu.into_device()
/// }
/// ```
pub struct DeviceBuf(Mapping);

/// A mapped buffer the CPU owns: it can be read and written, not posted.
pub struct CpuBuf(Mapping);

impl Mapping {
    /// Maps `buf` (kmalloc memory, as every `KVec` is) for `dir` on `dev`.
    fn new(dev: &DeviceRef, mut buf: KVec<u8>, dir: Direction) -> Result<Self> {
        if buf.is_empty() {
            return Err(EINVAL);
        }
        // SAFETY: `buf` is `buf.len()` bytes of kmalloc memory that lives as
        // long as the mapping (both are in `Mapping`).
        let addr = unsafe {
            bindings::ib_dma_map_single(dev.as_raw(), buf.as_mut_ptr().cast(), buf.len(), dir.raw())
        };
        // SAFETY: `addr` was just returned by the map call on this device.
        if unsafe { bindings::ib_dma_mapping_error(dev.as_raw(), addr) } != 0 {
            return Err(ENOMEM);
        }
        // INVARIANT: mapped above; `KVec` memory comes from kmalloc.
        Ok(Self {
            dev: dev.clone(),
            buf,
            addr,
            dir,
        })
    }

    /// Unmaps the buffer and gives its memory back, without the device.
    fn unmap(mut self) -> KVec<u8> {
        self.unmap_dma();
        // INVARIANT: unmapped, so emptied: `drop` does not unmap again.
        core::mem::take(&mut self.buf)
    }

    /// `ib_dma_unmap_single()` of the mapping; by `drop`, or by `unmap`,
    /// which then empties `buf`.
    fn unmap_dma(&self) {
        // SAFETY: `buf` is not empty (both callers), so `addr` maps it on
        // `dev` (type invariant); each caller unmaps once and leaves `buf`
        // empty or freed after.
        unsafe {
            bindings::ib_dma_unmap_single(
                self.dev.as_raw(),
                self.addr,
                self.buf.len(),
                self.dir.raw(),
            )
        };
    }
}

impl DeviceBuf {
    /// Allocates `len` zeroed bytes and maps them for `dir` on `dev`.
    pub fn alloc(dev: &DeviceRef, len: usize, dir: Direction) -> Result<Self> {
        if len == 0 {
            return Err(EINVAL);
        }
        Self::map(dev, KVec::from_elem(0u8, len, GFP_KERNEL)?, dir)
    }

    /// Maps `buf`, which the CPU has filled, for `dir` on `dev`: mapping
    /// hands it to the device. Data from user memory is copied into plain
    /// kernel memory first and mapped after, so that no device is pinned
    /// while a user copy waits on a page (userfaultfd, a slow file).
    pub fn map(dev: &DeviceRef, buf: KVec<u8>, dir: Direction) -> Result<Self> {
        Ok(Self(Mapping::new(dev, buf, dir)?))
    }

    /// Hands the buffer to the CPU (`ib_dma_sync_single_for_cpu`).
    pub fn into_cpu(self) -> CpuBuf {
        let m = &self.0;
        // SAFETY: a valid mapping (invariant of `Mapping`).
        unsafe {
            bindings::ib_dma_sync_single_for_cpu(m.dev.as_raw(), m.addr, m.buf.len(), m.dir.raw())
        };
        CpuBuf(self.0)
    }

    /// The bus address for a scatter/gather entry.
    pub fn dma_addr(&self) -> u64 {
        self.0.addr
    }

    /// The kernel address an inline scatter/gather entry names
    /// (`IB_SEND_INLINE`: the provider copies the bytes with the CPU while
    /// posting), for a buffer the device only reads (`ToDevice`). Its
    /// bytes are the CPU's last writes: [`CpuBuf::into_device`] made them
    /// the device's too, and nothing writes them while the device owns the
    /// buffer. `None` for a buffer the device may write.
    pub(super) fn inline_addr(&self) -> Option<u64> {
        match self.0.dir {
            Direction::ToDevice => Some(self.0.buf.as_ptr() as u64),
            _ => None,
        }
    }

    /// The buffer's length in bytes.
    pub fn len(&self) -> usize {
        self.0.buf.len()
    }

    /// The way the buffer is mapped.
    pub fn direction(&self) -> Direction {
        self.0.dir
    }

    /// The device the buffer is mapped on: its bus address means nothing
    /// to another.
    pub fn device(&self) -> &DeviceRef {
        &self.0.dev
    }
}

impl CpuBuf {
    /// Hands the buffer to the device (`ib_dma_sync_single_for_device`).
    pub fn into_device(self) -> DeviceBuf {
        let m = &self.0;
        // SAFETY: a valid mapping (invariant of `Mapping`).
        unsafe {
            bindings::ib_dma_sync_single_for_device(
                m.dev.as_raw(),
                m.addr,
                m.buf.len(),
                m.dir.raw(),
            )
        };
        DeviceBuf(self.0)
    }

    /// Unmaps the buffer and returns its memory: the CPU's for good, and
    /// holding no reference on the device, so it may wait on a user copy.
    pub fn unmap(self) -> KVec<u8> {
        self.0.unmap()
    }
}

impl Deref for CpuBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0.buf
    }
}

impl DerefMut for CpuBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.0.buf
    }
}

/// A mapped buffer the device owns for good, which the CPU reaches only by
/// ranged copies: memory a remote peer may access at any time.
///
/// # Invariants
///
/// The mapping is `Bidirectional`. No Rust reference to the bytes of
/// `0.buf` exists after [`SharedBuf::alloc`]: they are read and written
/// only through raw pointers, in [`SharedBuf::read`] and
/// [`SharedBuf::write`], which take `&mut self`: one copy and its sync at a
/// time (an owner that shares it keeps it in a mutex).
pub struct SharedBuf(Mapping);

impl SharedBuf {
    /// Allocates `len` zeroed bytes and maps them both ways on `dev`.
    pub fn alloc(dev: &DeviceRef, len: usize) -> Result<Self> {
        // INVARIANT: bidirectional; the bytes are not borrowed after this.
        Ok(Self(
            DeviceBuf::alloc(dev, len, Direction::Bidirectional)?.0,
        ))
    }

    /// The buffer's length in bytes.
    pub fn len(&self) -> usize {
        self.0.buf.len()
    }

    /// The kernel address of the memory, for building a scatterlist only.
    pub fn cpu_ptr(&self) -> *const u8 {
        self.0.buf.as_ptr()
    }

    /// The bus address for a scatter/gather entry.
    pub fn dma_addr(&self) -> u64 {
        self.0.addr
    }

    /// The bus address of byte `off`, if `off..off + len` is in the buffer.
    fn range(&self, off: usize, len: usize) -> Result<u64> {
        match off.checked_add(len) {
            Some(end) if end <= self.len() => Ok(self.0.addr + off as u64),
            _ => Err(EINVAL),
        }
    }

    /// Copies the bytes at `off` into `dst`: `ib_dma_sync_single_for_cpu()`
    /// of exactly that range, then a copy. Nothing is synced back: the CPU
    /// wrote nothing, and a sync for the device would copy its view of the
    /// range over writes the peer made since (swiotlb).
    pub fn read(&mut self, off: usize, dst: &mut [u8]) -> Result {
        let addr = self.range(off, dst.len())?;
        let m = &self.0;
        // SAFETY: `addr..addr + dst.len()` is within the mapping (`range`).
        unsafe {
            bindings::ib_dma_sync_single_for_cpu(m.dev.as_raw(), addr, dst.len(), m.dir.raw())
        };
        // SAFETY: the source range is within the buffer (`range`), which is
        // only ever accessed through raw pointers (type invariant), by one
        // CPU copy at a time (`&mut self`); `dst` is a distinct kernel
        // buffer.
        unsafe { copy_from_shared(m.buf.as_ptr().add(off), dst) };
        Ok(())
    }

    /// Copies `src` to the bytes at `off`, then
    /// `ib_dma_sync_single_for_device()` of exactly that range, so the
    /// device sees them and no byte outside it is touched.
    pub fn write(&mut self, off: usize, src: &[u8]) -> Result {
        let addr = self.range(off, src.len())?;
        let m = &self.0;
        // SAFETY: as in `read`, the other way; writing through a pointer
        // derived from the buffer's own allocation, never from a reference.
        unsafe { copy_to_shared(src, m.buf.as_ptr().cast_mut().add(off)) };
        // SAFETY: `addr..addr + src.len()` is within the mapping (`range`).
        unsafe {
            bindings::ib_dma_sync_single_for_device(m.dev.as_raw(), addr, src.len(), m.dir.raw())
        };
        Ok(())
    }
}

/// The unit of the copies over shared memory: a machine word.
const WORD: usize = core::mem::size_of::<usize>();

/// Copies `dst.len()` bytes from `src`, memory a device may write at the
/// same time, with volatile loads (the kernel's `READ_ONCE()`): a word at a
/// time where `src` is aligned to one, a byte at a time at the edges. A
/// plain copy would be a data race in Rust's memory model, which lets the
/// compiler assume the bytes do not change under it; a volatile load reads
/// what is there, some mix of old and new bytes if a DMA write is under way.
///
/// # Safety
///
/// `src..src + dst.len()` must be valid for reads, and written by nothing
/// but devices and this module's volatile copies while this runs.
unsafe fn copy_from_shared(src: *const u8, dst: &mut [u8]) {
    let mut i = 0;
    while i < dst.len() {
        // SAFETY: `i < dst.len()`, within the range (the caller's promise).
        let p = unsafe { src.add(i) };
        if p as usize % WORD == 0 && dst.len() - i >= WORD {
            // SAFETY: an aligned word inside the range.
            let w = unsafe { p.cast::<usize>().read_volatile() };
            dst[i..i + WORD].copy_from_slice(&w.to_ne_bytes());
            i += WORD;
        } else {
            // SAFETY: a byte inside the range.
            dst[i] = unsafe { p.read_volatile() };
            i += 1;
        }
    }
}

/// Copies `src` to `dst`, memory a device may read or write at the same
/// time, with volatile stores: the counterpart of [`copy_from_shared`].
///
/// # Safety
///
/// `dst..dst + src.len()` must be valid for writes, and accessed by nothing
/// but devices and this module's volatile copies while this runs.
unsafe fn copy_to_shared(src: &[u8], dst: *mut u8) {
    let mut i = 0;
    while i < src.len() {
        // SAFETY: `i < src.len()`, within the range (the caller's promise).
        let p = unsafe { dst.add(i) };
        if p as usize % WORD == 0 && src.len() - i >= WORD {
            let mut w = [0u8; WORD];
            w.copy_from_slice(&src[i..i + WORD]);
            // SAFETY: an aligned word inside the range.
            unsafe { p.cast::<usize>().write_volatile(usize::from_ne_bytes(w)) };
            i += WORD;
        } else {
            // SAFETY: a byte inside the range.
            unsafe { p.write_volatile(src[i]) };
            i += 1;
        }
    }
}
