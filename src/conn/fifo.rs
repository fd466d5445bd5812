// SPDX-License-Identifier: GPL-2.0

//! [`Fifo`], the queues of the message path: fragments received and
//! receive buffers waiting to be reposted.

use kernel::prelude::*;

/// A fixed-capacity FIFO (6.12's `KVec` has no `remove`).
pub(super) struct Fifo<T> {
    slots: KVec<Option<T>>,
    head: usize,
    len: usize,
}

impl<T> Fifo<T> {
    pub(super) fn new(cap: usize) -> Result<Self> {
        let mut slots = KVec::with_capacity(cap, GFP_KERNEL)?;
        for _ in 0..cap {
            slots.push(None, GFP_KERNEL)?;
        }
        Ok(Self {
            slots,
            head: 0,
            len: 0,
        })
    }

    pub(super) fn push(&mut self, v: T) -> core::result::Result<(), T> {
        let cap = self.slots.len();
        if self.len == cap {
            return Err(v);
        }
        let at = (self.head + self.len).checked_rem(cap).unwrap_or(0);
        match self.slots.get_mut(at) {
            Some(slot) => {
                *slot = Some(v);
                self.len += 1;
                Ok(())
            }
            None => Err(v),
        }
    }

    pub(super) fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = self.slots.get_mut(self.head)?.take();
        self.head = (self.head + 1).checked_rem(self.slots.len()).unwrap_or(0);
        self.len -= 1;
        v
    }

    pub(super) fn front(&self) -> Option<&T> {
        if self.len == 0 {
            return None;
        }
        self.slots.get(self.head)?.as_ref()
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }
}
