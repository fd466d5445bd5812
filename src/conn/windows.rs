// SPDX-License-Identifier: GPL-2.0

//! Windows: kernel memory exposed to the peer through its own registered
//! region (`kapi::verbs::Window`), revoked by invalidating its key, and
//! copied to and from user memory by range (`Documentation/dma.rst`).
//!
//! State: `Conn::windows`, [`abi::MAX_WINDOWS`] slots under their own lock,
//! never held across a user copy or a wait; exposes and revokes take
//! `TURN_OP`.

use super::*;

/// A window exposed to the peer, in its slot of [`Conn::windows`] (the
/// slot's index is the window's id).
pub(super) struct Exposed {
    /// Memory and region together; copies to and from user memory hold a
    /// count of their own, so they run without the `windows` lock.
    pub(super) mem: Arc<Window>,
    /// Registered and not revoked. A window whose registration or revocation
    /// did not finish stays here, unusable, until the connection is torn
    /// down (its memory must outlive any key the peer might still use).
    pub(super) live: bool,
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
        let id = self
            .windows
            .lock()
            .iter()
            .position(Option::is_none)
            .ok_or(ENOSPC)?;
        // Not a kernel address: the window id in the high bits.
        let mem = Arc::new(
            Window::new(&pd, e.len as usize, (id as u64 + 1) << 32)?,
            GFP_KERNEL,
        )?;
        let (addr, rkey) = (mem.iova(), mem.rkey());
        if let Some(slot) = self.windows.lock().get_mut(id) {
            *slot = Some(Exposed {
                mem: mem.clone(),
                live: false,
            });
        }
        let mut steps = KVec::new();
        steps.push(Step::Reg(mem, access), GFP_KERNEL)?;
        self.run_op(0, steps)?;
        if let Some(Some(w)) = self.windows.lock().get_mut(id) {
            w.live = true;
        }
        Ok((addr, rkey, id as u32))
    }

    /// The memory of live window `id`, if it has at least `len` bytes.
    pub(super) fn window(&self, id: u32, len: usize) -> Result<Arc<Window>> {
        let windows = self.windows.lock();
        let w = windows
            .get(id as usize)
            .and_then(Option::as_ref)
            .filter(|w| w.live)
            .ok_or(ENOENT)?;
        if w.mem.len() < len {
            return Err(EINVAL);
        }
        Ok(w.mem.clone())
    }

    /// `IOCTL_REVOKE`: invalidate the key, then free the window.
    pub(crate) fn revoke(self: &Arc<Self>, id: u32) -> Result {
        let _turn = self.take_turns(TURN_OP, deadline(UNTIL_VERDICT))?;
        let mem = self.window(id, 0)?;
        let mut steps = KVec::new();
        steps.push(Step::Inv(mem), GFP_KERNEL)?;
        let r = self.run_op(0, steps);
        let mut windows = self.windows.lock();
        if let Some(slot) = windows.get_mut(id as usize) {
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
    /// user memory, through a kernel bounce buffer (the window is only ever
    /// copied by range, see [`Window`]), without the `windows` lock: a
    /// user copy that stalls (userfaultfd) holds up nothing else.
    pub(crate) fn window_io(&self, io: &abi::WindowIo, to_user: bool) -> Result {
        if io.reserved != 0 {
            return Err(EINVAL);
        }
        let mem = self.window(io.id, 0)?;
        let end = io.offset.checked_add(io.len).ok_or(EINVAL)?;
        if end > mem.len() as u64 {
            return Err(EINVAL);
        }
        let (off, len) = (io.offset as usize, io.len as usize);
        let mut bounce = KVec::with_capacity(len.min(WINDOW_IO_CHUNK), GFP_KERNEL)?;
        bounce.extend_with(len.min(WINDOW_IO_CHUNK), 0u8, GFP_KERNEL)?;
        let (mut reader, mut writer) = UserSlice::new(io.buf as usize, len).reader_writer();
        let mut done = 0;
        while done < len {
            let n = (len - done).min(WINDOW_IO_CHUNK);
            let chunk = bounce.get_mut(..n).ok_or(EINVAL)?;
            if to_user {
                mem.read(off + done, chunk)?;
                writer.write_slice(chunk)?;
            } else {
                reader.read_slice(chunk)?;
                mem.write(off + done, chunk)?;
            }
            done += n;
        }
        Ok(())
    }
}
