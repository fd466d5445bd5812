// SPDX-License-Identifier: GPL-2.0

//! Windows: kernel memory exposed to the peer through its own registered
//! region (`kernel::rdma::mr::Region`), revoked by invalidating its key, and
//! copied to and from user memory by range (`Documentation/dma.rst`).
//!
//! State: `Conn::windows`, [`abi::MAX_WINDOWS`] slots under their own lock,
//! never held across a user copy or a wait; exposes and revokes take
//! `TURN_OP`.

use super::*;

/// A window exposed to the peer, in its slot of [`Windows`] (the slot's
/// index is the window's id).
pub(super) struct Exposed {
    /// Memory and region together; a copy takes a count of its own for one
    /// chunk, so it runs without the `windows` lock.
    pub(super) mem: Arc<Region>,
    /// Registered and not revoked. A window whose registration or revocation
    /// did not finish stays here, unusable for copies, until a revoke that
    /// completes or the connection's teardown frees it (its memory must
    /// outlive any key the peer might still use).
    pub(super) live: bool,
    /// Which expose this is ([`Windows::serial`]): a copy checks it for
    /// each chunk, so it never moves on into a window exposed later under
    /// the same id.
    pub(super) serial: u64,
}

/// The windows of a connection: [`abi::MAX_WINDOWS`] slots, allocated up
/// front, so that removing one never allocates (and cannot fail).
///
/// # Invariants
///
/// `sealed` implies every slot is `None`: once [`Conn::shutdown`] has
/// emptied them, [`Windows::reserve`] refuses, so an expose that was
/// already running cannot store a window (with its region, mapping and
/// `DeviceRef`) that nothing would ever free.
pub(super) struct Windows {
    slots: KVec<Option<Exposed>>,
    sealed: bool,
    /// The serial of the last window exposed.
    serial: u64,
}

impl Windows {
    pub(super) fn new() -> Result<Self> {
        let mut slots = KVec::with_capacity(abi::MAX_WINDOWS as usize, GFP_KERNEL)?;
        for _ in 0..abi::MAX_WINDOWS {
            slots.push(None, GFP_KERNEL)?;
        }
        Ok(Self {
            slots,
            sealed: false,
            serial: 0,
        })
    }

    /// Puts `mem` in slot `id`, not live yet; `Ok(false)`, and nothing
    /// stored, once sealed.
    fn install(&mut self, id: usize, mem: &Arc<Region>) -> Result<bool> {
        if self.sealed {
            return Ok(false);
        }
        self.serial += 1;
        let serial = self.serial;
        match self.slots.get_mut(id) {
            Some(slot @ None) => {
                *slot = Some(Exposed {
                    mem: mem.clone(),
                    live: false,
                    serial,
                });
                Ok(true)
            }
            _ => Err(EBUSY),
        }
    }

    /// The exposed window `id`.
    fn get(&self, id: u32) -> Option<&Exposed> {
        self.slots.get(id as usize).and_then(Option::as_ref)
    }

    fn get_mut(&mut self, id: u32) -> Option<&mut Option<Exposed>> {
        self.slots.get_mut(id as usize)
    }

    /// Frees every window and takes no more.
    pub(super) fn seal(&mut self) {
        self.sealed = true;
        // INVARIANT: sealed, and every slot emptied.
        for w in self.slots.iter_mut() {
            *w = None;
        }
    }

    /// The first free slot's id, if any (a window exposed now would get it).
    fn free_id(&self) -> Option<usize> {
        self.slots.iter().position(Option::is_none)
    }
}

impl Conn {
    /// `IOCTL_EXPOSE`: a zeroed buffer the peer may access as asked, and no
    /// more. Returns (address, rkey, id).
    pub(crate) fn expose(self: &Arc<Self>, e: &abi::Expose) -> Result<(u64, u32, u32)> {
        let known = abi::ACCESS_READ | abi::ACCESS_WRITE | abi::ACCESS_ATOMIC;
        if e.reserved != 0 || e.access == 0 || e.access & !known != 0 {
            return Err(EINVAL);
        }
        if e.len == 0 || e.len > abi::MAX_WINDOW_SIZE {
            return Err(EINVAL);
        }
        let mut access = Access::NONE;
        if e.access & abi::ACCESS_READ != 0 {
            access = access.union(Access::REMOTE_READ);
        }
        if e.access & abi::ACCESS_WRITE != 0 {
            access = access.union(Access::REMOTE_WRITE);
        }
        if e.access & abi::ACCESS_ATOMIC != 0 {
            access = access.union(Access::REMOTE_ATOMIC);
        }
        let _turn = self.take_turns(TURN_OP, deadline(UNTIL_VERDICT))?;
        Self::require_connected(&self.st.lock())?;
        let pd = self.op_pd()?;
        if e.access & abi::ACCESS_ATOMIC != 0 && !pd.device().attrs().has_atomics() {
            return Err(errno::EOPNOTSUPP());
        }
        // The turn keeps other exposes and revokes out until this one is in
        // its slot.
        let id = self.windows.lock().free_id().ok_or(ENOSPC)?;
        // Not a kernel address: the window id in the high bits.
        let mem = Region::new(&pd, e.len as usize, (id as u64 + 1) << 32)?;
        let addr = mem.iova();
        // Refused once the connection is torn down (`Windows::seal`), which
        // closed it first.
        if !self.windows.lock().install(id, &mem)? {
            return Err(Self::closed_error(&self.st.lock()));
        }
        let mut steps = KVec::new();
        steps.push(Step::Reg(mem.clone(), access), GFP_KERNEL)?;
        self.run_op(0, steps)?;
        // The key of this registration: each moves it on.
        let rkey = mem.rkey();
        if let Some(Some(w)) = self.windows.lock().get_mut(id as u32) {
            w.live = true;
        }
        Ok((addr, rkey, id as u32))
    }

    /// The memory of live window `id`, if it has at least `len` bytes, and
    /// its serial.
    pub(super) fn window(&self, id: u32, len: usize) -> Result<Arc<Region>> {
        Ok(self.window_serial(id, len, None)?.0)
    }

    /// [`Self::window`], and if `serial` is given, only the window of that
    /// expose. `ENOENT` if there is none (revoked, or another took its id),
    /// or the connection's errno once it is torn down (`ENODEV` when its
    /// device has gone).
    fn window_serial(
        &self,
        id: u32,
        len: usize,
        serial: Option<u64>,
    ) -> Result<(Arc<Region>, u64)> {
        let (found, sealed) = {
            let windows = self.windows.lock();
            let found = windows
                .get(id)
                .filter(|w| w.live && serial.map_or(true, |s| s == w.serial))
                .map(|w| (w.mem.clone(), w.serial));
            (found, windows.sealed)
        };
        let Some((mem, serial)) = found else {
            // Torn down (the device went): the connection's errno, read
            // outside `windows` (the two locks never nest).
            return Err(if sealed {
                Self::closed_error(&self.st.lock())
            } else {
                ENOENT
            });
        };
        if mem.len() < len {
            return Err(EINVAL);
        }
        Ok((mem, serial))
    }

    /// `IOCTL_REVOKE`: invalidate the key, then free the window. A revoke
    /// that fails leaves the window in its slot, unusable, to be revoked
    /// again.
    pub(crate) fn revoke(self: &Arc<Self>, id: u32) -> Result {
        let _turn = self.take_turns(TURN_OP, deadline(UNTIL_VERDICT))?;
        // Live or not: a window whose registration or an earlier revoke
        // did not finish (timed out, interrupted) may still hold a valid
        // key, and revoking it again is how its owner gets rid of it. The
        // turn keeps every other expose and revoke out meanwhile.
        let mem = self
            .windows
            .lock()
            .get(id)
            .map(|w| w.mem.clone())
            .ok_or(ENOENT)?;
        let mut steps = KVec::new();
        steps.push(Step::Inv(mem), GFP_KERNEL)?;
        let r = self.run_op(0, steps);
        let mut windows = self.windows.lock();
        if let Some(slot) = windows.get_mut(id) {
            match r {
                // The key is dead: the window can go now.
                Ok(_) => *slot = None,
                // Perhaps still valid: kept, unusable, until teardown.
                Err(_) => {
                    if let Some(w) = slot.as_mut() {
                        w.live = false;
                    }
                }
            }
        }
        r.map(|_| ())
    }

    /// `IOCTL_WINDOW_READ` / `IOCTL_WINDOW_WRITE`: copy between a window and
    /// user memory through a kernel bounce buffer, a chunk at a time (the
    /// window is only ever copied by range, see [`Region`]). Each chunk
    /// takes the window for its copy to or from the bounce buffer only,
    /// never across the user copy: a user copy that stalls (userfaultfd)
    /// holds up neither the `windows` lock nor the window's device, whose
    /// removal frees the window. A window revoked or freed between chunks
    /// ends the copy with `ENOENT`.
    pub(crate) fn window_io(&self, io: &abi::WindowIo, to_user: bool) -> Result {
        if io.reserved != 0 {
            return Err(EINVAL);
        }
        let end = io.offset.checked_add(io.len).ok_or(EINVAL)?;
        let len = usize::try_from(end).map_err(|_| EINVAL)?;
        let (_, serial) = self.window_serial(io.id, len, None)?;
        let (off, len) = (io.offset as usize, io.len as usize);
        let mut bounce = KVec::from_elem(0u8, len.min(WINDOW_IO_CHUNK), GFP_KERNEL)?;
        let (mut reader, mut writer) = UserSlice::new(io.buf as usize, len).reader_writer();
        let mut done = 0;
        while done < len {
            let n = (len - done).min(WINDOW_IO_CHUNK);
            let chunk = bounce.get_mut(..n).ok_or(EINVAL)?;
            if to_user {
                self.window_serial(io.id, 0, Some(serial))?
                    .0
                    .read(off + done, chunk)?;
                writer.write_slice(chunk)?;
            } else {
                reader.read_slice(chunk)?;
                self.window_serial(io.id, 0, Some(serial))?
                    .0
                    .write(off + done, chunk)?;
            }
            done += n;
        }
        Ok(())
    }
}
