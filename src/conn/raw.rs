// SPDX-License-Identifier: GPL-2.0

//! Raw connections (`abi::CONN_RAW`): every SEND carries exactly the
//! caller's bytes and every receive is handed over as it came, with no
//! header and no credits, for peers that echo what they get (the
//! `kernel::rdma` echo sample). Their receives are 64 KiB; message
//! connections are in `msg.rs`.

use super::*;

impl Conn {
    /// A raw SEND: exactly the caller's bytes, then wait for it.
    pub(super) fn send_raw(self: &Arc<Self>, x: &abi::Xfer, timeout: u32) -> Result {
        let len = x.len as usize;
        if len > RECV_BUF {
            return Err(errno::EMSGSIZE());
        }
        // Copied into kernel memory first, mapped after (see `send`).
        let mut data = KVec::from_elem(0u8, len.max(1), GFP_KERNEL)?;
        UserSlice::new(x.buf as usize, len)
            .reader()
            .read_slice(data.get_mut(..len).ok_or(EINVAL)?)?;
        let buf = DeviceBuf::map(&self.op_device()?, data, Direction::ToDevice)?;
        {
            let mut st = self.st.lock();
            st.msg.sends_inflight += 1;
            st.msg.send_failed = false;
        }
        let r = {
            let ep = self.ep.lock();
            match ep.qp() {
                Some(qp) => qp
                    .post_send(self, Work::Send(buf, len), SendOp::Send)
                    .map_err(|(e, _)| self.post_failed(&ep, e)),
                None => Err(self.no_qp()),
            }
        };
        if let Err(e) = r {
            self.st.lock().msg.sends_inflight -= 1;
            return Err(e);
        }
        self.wait_sent(timeout)
    }

    /// A raw RECV: the next received buffer as it came.
    pub(super) fn recv_raw(self: &Arc<Self>, x: &abi::Xfer, timeout: u32) -> Result<u64> {
        self.pump_unless_closed()?;
        self.recv_one(x, 0, timeout)
    }
}
