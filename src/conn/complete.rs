// SPDX-License-Identifier: GPL-2.0

//! The connection's completion handler: each completion goes to the path
//! of its request (a receive, a SEND, a step of a one-sided operation),
//! then what any of them may call for follows, outside `st`: the work
//! items of announced messages, moving the QP to the error state, the
//! disconnect owed to the peer.

use super::*;

impl CompletionHandler for Conn {
    type Ctx = Work;

    fn complete(this: &Arc<Self>, wc: &Wc, ctx: Work) {
        let mut st = this.st.lock();
        match ctx {
            Work::Recv(buf) => this.complete_recv(&mut st, wc, buf),
            Work::Send(buf, _) => {
                drop(buf);
                this.complete_send(&mut st, wc);
            }
            Work::Op {
                gen, idx, buf, msg, ..
            } => this.complete_op(&mut st, wc, msg, gen, idx, buf),
        }
        // Into the error state after a protocol fault or a failed (not
        // flushed) request, so everything posted completes: siw may leave
        // the QP in RTS after a failed transmit (providers.rst).
        let failed = !wc.ok() && !wc.flushed();
        let fail = core::mem::take(&mut st.msg.fail_qp) || failed;
        // A QP that failed on its own answers nothing more, and the peer's
        // QP may not know: its own requests would retry into ours (on RoCE
        // a QP in the error state drops them; rxe retries at count 7 for
        // ever) and its receives wait. It learns from our disconnect, as
        // after a protocol fault (`wire_fault`) or a refused post
        // (`post_failed`).
        if failed {
            st.msg.hang_up = true;
        }
        // A polled connection's handlers run under `ep`, in `reap`, which
        // pays the debt itself.
        let hang_up = st.msg.hang_up && !st.polled;
        let read = core::mem::take(&mut st.msg.read_wanted);
        let retire_in = core::mem::take(&mut st.msg.retire_in);
        // Nobody sleeps on a spinning connection's `cv` (`St::spin`): its
        // waiters reap, and a wake-up would only take the wait queue's lock
        // with interrupts off, twice a round trip of a ping-pong.
        if !st.spin {
            this.cv.notify_all();
        }
        drop(st);
        if read {
            Delayed::<Conn, READ_WORK>::queue(this, 0);
        }
        if retire_in > 0 {
            Delayed::<Conn, RETIRE_WORK>::queue(this, retire_in);
        }
        // Outside `st`: modifying a QP may sleep, and its flushed
        // completions take `st` (on the workqueue, or in this very thread's
        // reaping loop when polled, after this handler returns).
        if fail {
            if let Err(e) = wc.fail_qp() {
                pr_debug!("moving the QP to the error state failed: {:?}\n", e);
            }
        }
        // On ib_core's workqueue, which no holder of `ep` waits for.
        if hang_up {
            this.hang_up_if_owed(&this.ep.lock());
        }
    }
}
