# SPDX-License-Identifier: GPL-2.0
"""An iWARP peer over plain TCP sockets for the siw reproducers.

Just enough MPA (RFC 5044, with the version 2 enhancements of RFC 6581)
and DDP/RDMAP (RFC 5041, RFC 5040) to stand at either end of a siw
connection's handshake, send zero-length RDMA WRITEs (which need no
memory registered at the other end) and read the FPDUs siw sends. CRC is
not negotiated (siw's default): the CRC field is sent as zero and not
checked.
"""

import socket
import time
import struct

KEY_REQ = b"MPA ID Req Frame"
KEY_REP = b"MPA ID Rep Frame"
# The first byte of the header's flags and revision: M, C, R, S bits.
F_REJECT = 0x20
F_ENHANCED = 0x10
IRD_ORD_MASK = 0x3FFF

DDP_TAGGED = 0x8000
DDP_LAST = 0x4000
VERSIONS = 0x0140  # DDP version 1, RDMAP version 1
OP_WRITE = 0
OPS_SEND = (3, 4, 5, 6)  # SEND, with invalidate, with solicited event, both


def read_exact(sock, n):
    """n bytes, or fewer if the stream ends first."""
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def request(ird=16, ord_=16):
    """An MPA v2 request in enhanced mode, as siw's active side sends it."""
    return KEY_REQ + bytes([F_ENHANCED, 2]) + struct.pack(">HHH", 4, ird, ord_)


def read_request_or_reply(sock):
    """(key, flags, revision, private data) or None if the stream ended."""
    hdr = read_exact(sock, 20)
    if len(hdr) < 20:
        return None
    pd_len = struct.unpack(">H", hdr[18:20])[0]
    return hdr[:16], hdr[16], hdr[17], read_exact(sock, pd_len)


def reply_to(req, ird=None):
    """The MPA reply accepting @req: IRD and ORD mirrored, so that either
    end's ORD fits the other's IRD; no CRC, no markers. @ird, if given,
    is the IRD announced instead: siw's active side takes it as its ORD
    unchecked and allocates its ORQ (an entry per read, rounded up to a
    power of two) after it has read the reply and before it hands the
    socket to the QP."""
    _, flags, rev, pd = req
    if rev == 2 and flags & F_ENHANCED:
        req_ird, req_ord = struct.unpack(">HH", pd[:4])
        rep_ird = req_ord if ird is None else ird
        return KEY_REP + bytes([F_ENHANCED, 2]) + struct.pack(
            ">HHH", 4, rep_ird & IRD_ORD_MASK, req_ird & IRD_ORD_MASK)
    return KEY_REP + bytes([0, rev]) + struct.pack(">H", 0)


def fpdu(ulpdu):
    """An FPDU around @ulpdu: length, padding to four bytes, CRC field."""
    pad = -(len(ulpdu) + 2) % 4
    return struct.pack(">H", len(ulpdu)) + ulpdu + b"\0" * pad + b"\0" * 4


def zero_write(stag=0x100):
    """A complete zero-length RDMA WRITE: valid for any STag."""
    return fpdu(struct.pack(">HIQ", DDP_TAGGED | DDP_LAST | VERSIONS | OP_WRITE,
                            stag, 0))


def fpdus(sock):
    """Yield (DDP/RDMAP control, rest of the ULPDU) for each FPDU read."""
    while True:
        raw = read_exact(sock, 2)
        if len(raw) < 2:
            return
        n = struct.unpack(">H", raw)[0]
        ulpdu = read_exact(sock, n)
        trailer = read_exact(sock, -(n + 2) % 4 + 4)
        if len(ulpdu) < n or len(trailer) < -(n + 2) % 4 + 4:
            return
        yield struct.unpack(">H", ulpdu[:2])[0], ulpdu[2:]


def listen(addr, port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(64)
    return s


def nodelay(sock):
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def busy_cm(addr, port, n=40):
    """n connections to the siw listener at @port, made 10 ms apart so
    that siw accepts each before the next (a connection reset before siw
    accepted it is 0005's bug). kick() then has each send a byte: an MPA
    request too short to act on, which still costs siw's connection
    workqueue, one item at a time, a work item per connection."""
    socks = []
    for _ in range(n):
        socks.append(nodelay(socket.create_connection((addr, port))))
        time.sleep(0.01)
    time.sleep(0.2)
    return socks


def kick(socks):
    for s in socks:
        s.send(KEY_REQ[:1])
