/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * The /dev/rdma_krust ioctl ABI: its one definition.
 *
 * C callers include it. bindgen makes the Rust types and numbers of the
 * module and of the rdma-krust tools from it (abi/uapi_helper.h);
 * abi/src/abi/ names them in Rust, struct
 * rdma_krust_foo_bar as FooBar and RDMA_KRUST_FOO as FOO.
 *
 * Every structure is naturally aligned with no implicit padding and carries
 * user pointers as 64-bit integers, so the layout is the same for 32-bit
 * and 64-bit callers. Fields named reserved must be zero on input (EINVAL
 * otherwise). See Documentation/ioctl-abi.rst.
 */
#ifndef _UAPI_LINUX_RDMA_KRUST_H
#define _UAPI_LINUX_RDMA_KRUST_H

#include <linux/types.h>
#include <linux/ioctl.h>

/*
 * Version of this ABI, bumped whenever it changes; RDMA_KRUST_IOCTL_VERSION
 * reports the module's. 3: RDMA_KRUST_CONN_POLL, RDMA_KRUST_BENCH_PINGPONG,
 * rdma_krust_bench.window; 4: struct rdma_krust_transport in connect_req,
 * listen_req and conn_info, and a timeout_ms of 0 on one-sided operations
 * waits for the transport; 6: rdma_krust_bench.samples on a bandwidth run
 * takes each message's post and completion time, and total_ns starts at
 * the first post; 7: rdma_krust_device_info.max_window; 8:
 * RDMA_KRUST_CONN_SPIN; 10: a latency run's samples are perftest's, from
 * one post to the next, and its total_ns runs from the first post to the
 * end of the last sample; 11: wire version 2 (a message takes one receive
 * of RDMA_KRUST_MSG_RECV_BUF_SIZE, a longer one is announced and READ),
 * and a message connection's default depth RDMA_KRUST_MSG_RECV_DEPTH.
 */
#define RDMA_KRUST_ABI_VERSION		11

/* The ioctl type byte. */
#define RDMA_KRUST_IOC_MAGIC		0xb9

/* Length of rdma_krust_device_info.name, including the terminating NUL. */
#define RDMA_KRUST_DEVICE_NAME_LEN	64
/* Ports reported per device in rdma_krust_device_info.ports. */
#define RDMA_KRUST_MAX_PORTS		4
/* Entries in rdma_krust_version.cmds. */
#define RDMA_KRUST_MAX_CMDS		32

/* Output of RDMA_KRUST_IOCTL_VERSION. */
struct rdma_krust_version {
	__u32 abi_version;	/* RDMA_KRUST_ABI_VERSION of the module */
	__u32 n_cmds;		/* valid entries in cmds */
	/* the full command numbers the module accepts, as it was compiled */
	__u32 cmds[RDMA_KRUST_MAX_CMDS];
};

/* One port of an RDMA device, in rdma_krust_device_info.ports. */
struct rdma_krust_port_info {
	__u32 port_num;		/* starts at 1 for a channel adapter */
	__u32 state;		/* enum ib_port_state when added (4: ACTIVE) */
	__u32 active_mtu;	/* enum ib_mtu (1: 256 bytes ... 5: 4096) */
	__u32 link_layer;	/* 1 InfiniBand, 2 Ethernet (RoCE, iWARP) */
};

/* One RDMA device as the module's ib_client saw it when it was added. */
struct rdma_krust_device_info {
	__u8 name[RDMA_KRUST_DEVICE_NAME_LEN];	/* NUL-terminated, "rxe0" */
	__aligned_u64 node_guid;	/* host byte order */
	__aligned_u64 max_mr_size;	/* ib_device_attr::max_mr_size */
	__u32 max_qp_rd_atom;		/* READ/atomics served per QP */
	__u32 max_qp_init_rd_atom;	/* READ/atomics issued per QP */
	__u32 atomic_cap;		/* enum ib_atomic_cap: 0 none, 1 HCA,
					 * 2 global */
	__u32 num_ports;		/* ports the device has */
	/* the first min(num_ports, RDMA_KRUST_MAX_PORTS) ports */
	struct rdma_krust_port_info ports[RDMA_KRUST_MAX_PORTS];
	/* largest EXPOSE len the device can register in one region (its
	 * max_fast_reg_page_list_len, page sizes, max_mr_size and largest
	 * DMA mapping), at most RDMA_KRUST_MAX_WINDOW_SIZE */
	__aligned_u64 max_window;
};

/*
 * Argument of RDMA_KRUST_IOCTL_LIST_DEVICES: pass capacity 0 to learn
 * count, then an array of capacity entries at devices. The kernel writes
 * min(capacity, count) entries and always sets count to the total.
 */
struct rdma_krust_device_list {
	__aligned_u64 devices;	/* user pointer to device_info[capacity] */
	__u32 capacity;		/* at most RDMA_KRUST_MAX_LIST_CAPACITY */
	__u32 count;		/* out: the number of devices */
	__aligned_u64 reserved;	/* must be zero */
};

/* Largest rdma_krust_device_list.capacity accepted (EINVAL above it). */
#define RDMA_KRUST_MAX_LIST_CAPACITY	256

/* rdma_krust_addr.family: the values of AF_INET and AF_INET6. */
#define RDMA_KRUST_AF_INET		2
#define RDMA_KRUST_AF_INET6		10

/* An IPv4 or IPv6 address and port. */
struct rdma_krust_addr {
	__u16 family;		/* RDMA_KRUST_AF_INET or _AF_INET6 */
	__u16 port;		/* host byte order */
	__u32 reserved;		/* must be zero */
	__u8 addr[16];		/* network byte order; IPv4: first 4 bytes */
};

/* Connection states, in rdma_krust_conn_info.state. */
#define RDMA_KRUST_STATE_IDLE		0	/* nothing yet */
#define RDMA_KRUST_STATE_LISTENING	1	/* LISTEN done, no connection */
#define RDMA_KRUST_STATE_CONNECTING	2	/* resolving, connecting or
						 * accepting */
#define RDMA_KRUST_STATE_CONNECTED	3	/* operations are allowed */
#define RDMA_KRUST_STATE_CLOSED		4	/* disconnected, failed, or its
						 * device went away */

/*
 * A connection's transport settings (Documentation/transport.rst). set says
 * which fields carry a value; the others take the module's defaults. On
 * the passive side (RDMA_KRUST_IOCTL_LISTEN) retry_count may not be set.
 */
struct rdma_krust_transport {
	__u32 set;		/* RDMA_KRUST_TRANSPORT_* bits */
	__u8 ack_timeout;	/* 4.096 us * 2^ack_timeout, 1 to 31 */
	__u8 retry_count;	/* resends without progress, 0 to 7 */
	__u8 rnr_retry;		/* resends after RNR NAKs, 0 to 7 (forever) */
	__u8 min_rnr_timer;	/* RNR NAK timer asked of the peer, IBTA
				 * table 45 code, 0 to 31 */
	__u32 recv_depth;	/* receives kept posted, MIN_RECV_DEPTH to
				 * RECV_DEPTH; the peer learns it */
};

/* rdma_krust_transport.set: the field carries a value. */
#define RDMA_KRUST_TRANSPORT_ACK_TIMEOUT	1
#define RDMA_KRUST_TRANSPORT_RETRY_COUNT	2	/* active side only */
#define RDMA_KRUST_TRANSPORT_RNR_RETRY		4
#define RDMA_KRUST_TRANSPORT_MIN_RNR_TIMER	8
#define RDMA_KRUST_TRANSPORT_RECV_DEPTH		16
/* Every rdma_krust_transport.set bit. */
#define RDMA_KRUST_TRANSPORT_ALL		31

/* The module's defaults for what rdma_krust_transport.set leaves out. */
#define RDMA_KRUST_DEFAULT_ACK_TIMEOUT		14	/* 67 ms */
#define RDMA_KRUST_DEFAULT_RETRY_COUNT		7
#define RDMA_KRUST_DEFAULT_RNR_RETRY		7	/* forever, with CONN_RAW */
#define RDMA_KRUST_DEFAULT_MSG_RNR_RETRY	3	/* without CONN_RAW: the
							 * credits make RNR
							 * needless */
#define RDMA_KRUST_DEFAULT_MIN_RNR_TIMER	12	/* 0.64 ms */

/*
 * A connection, as RDMA_KRUST_IOCTL_CONN_INFO, RDMA_KRUST_IOCTL_CONNECT and
 * RDMA_KRUST_IOCTL_ACCEPT report it.
 */
struct rdma_krust_conn_info {
	__u32 state;			/* RDMA_KRUST_STATE_* */
	__u32 error;			/* closed: the errno (positive) */
	__u32 responder_resources;	/* negotiated, read back from the QP */
	__u32 initiator_depth;		/* negotiated, read back from the QP */
	__u32 asked_responder_resources; /* asked, after defaults and
					  * clamping */
	__u32 asked_initiator_depth;	/* asked, after defaults and clamping */
	__u32 peer_responder_resources;	/* passive side: what the peer's
					 * request asked; else 0 */
	__u32 peer_initiator_depth;	/* likewise */
	__u32 dev_max_qp_rd_atom;	/* the device's max_qp_rd_atom */
	__u32 dev_max_qp_init_rd_atom;	/* the device's max_qp_init_rd_atom */
	__u32 credits;			/* send credits held now */
	__u32 recv_depth;		/* receives this side keeps posted */
	__u32 peer_recv_depth;		/* receives the peer keeps posted */
	__u32 iwarp;			/* 1 if the device speaks iWARP */
	__u32 read_sinks;		/* iWARP READ sinks registered */
	/* once connected: the QP's settings; set has every bit, none on
	 * iWARP */
	struct rdma_krust_transport transport;
	__u8 device[RDMA_KRUST_DEVICE_NAME_LEN]; /* NUL-terminated */
};

/*
 * Argument of RDMA_KRUST_IOCTL_CONNECT. responder_resources and
 * initiator_depth are what this side asks for: 0 means the device's
 * maximum, larger values are clamped to it.
 */
struct rdma_krust_connect_req {
	struct rdma_krust_addr dst;	/* the listener */
	__u32 timeout_ms;		/* per connect step; 0: the default */
	__u32 responder_resources;	/* READ/atomics served; 0: maximum */
	__u32 initiator_depth;		/* READ/atomics issued; 0: maximum */
	__u32 flags;			/* RDMA_KRUST_CONN_*, or zero */
	struct rdma_krust_transport transport; /* what set leaves out takes
						* the defaults */
	struct rdma_krust_conn_info info;	/* out: the connection */
};

/* Connection flag: raw messages, one SEND per RDMA_KRUST_IOCTL_SEND of at
 * most RDMA_KRUST_RECV_BUF_SIZE bytes; no header, fragments or credits. */
#define RDMA_KRUST_CONN_RAW		1
/* Connection flag: busy polling (IB_POLL_DIRECT) by the waiting threads. */
#define RDMA_KRUST_CONN_POLL		2
/* How long a CONN_POLL waiter spins without a completion before napping. */
#define RDMA_KRUST_POLL_SPIN_US		2000
/* Connection flag, with CONN_POLL only: waiters spin without yielding the
 * CPU or napping (given up only where the scheduler takes it). */
#define RDMA_KRUST_CONN_SPIN		4

/*
 * Argument of RDMA_KRUST_IOCTL_LISTEN: listen on addr and take the first
 * connection request; RDMA_KRUST_IOCTL_ACCEPT waits for it.
 */
struct rdma_krust_listen_req {
	struct rdma_krust_addr addr;	/* address and port to listen on */
	__u32 responder_resources;	/* cap on READ/atomics served;
					 * 0: maximum */
	__u32 initiator_depth;		/* cap on READ/atomics issued;
					 * 0: maximum */
	__u32 flags;			/* RDMA_KRUST_CONN_*, or zero */
	__u32 reserved;			/* must be zero */
	/* the accepted connection's; retry_count may not be set */
	struct rdma_krust_transport transport;
};

/* Argument of RDMA_KRUST_IOCTL_ACCEPT. */
struct rdma_krust_accept_req {
	__u32 timeout_ms;		/* 0: RDMA_KRUST_DEFAULT_TIMEOUT_MS */
	__u32 reserved;			/* must be zero */
	struct rdma_krust_conn_info info; /* out: the connection */
};

/* Argument of RDMA_KRUST_IOCTL_SEND and RDMA_KRUST_IOCTL_RECV. */
struct rdma_krust_xfer {
	__aligned_u64 buf;	/* user pointer to the data, or to room */
	__aligned_u64 len;	/* SEND: 0 to RDMA_KRUST_MAX_MSG_SIZE;
				 * RECV: room, out: the message's length */
	__u32 timeout_ms;	/* wait for the peer; 0: the default */
	__u32 flags;		/* must be zero */
};

/* rdma_krust_expose.access bits. */
#define RDMA_KRUST_ACCESS_READ		1	/* peers may RDMA READ */
#define RDMA_KRUST_ACCESS_WRITE		2	/* peers may RDMA WRITE */
#define RDMA_KRUST_ACCESS_ATOMIC	4	/* peers may run atomics */

/* Largest window of RDMA_KRUST_IOCTL_EXPOSE (512 pages). */
#define RDMA_KRUST_MAX_WINDOW_SIZE	(2 << 20)
/* Windows one connection may have exposed at once. */
#define RDMA_KRUST_MAX_WINDOWS		16

/* Argument of RDMA_KRUST_IOCTL_EXPOSE: expose a zeroed kernel buffer. */
struct rdma_krust_expose {
	__aligned_u64 len;	/* 1 to RDMA_KRUST_MAX_WINDOW_SIZE */
	__u32 access;		/* RDMA_KRUST_ACCESS_* bits, at least one */
	__u32 reserved;		/* must be zero */
	__aligned_u64 addr;	/* out: the peer's address of byte 0 */
	__u32 rkey;		/* out: the remote key */
	__u32 id;		/* out: the window's id on this fd */
};

/* Argument of RDMA_KRUST_IOCTL_REVOKE. */
struct rdma_krust_revoke {
	__u32 id;		/* the window's id */
	__u32 reserved;		/* must be zero */
};

/* Argument of RDMA_KRUST_IOCTL_WINDOW_READ and _WINDOW_WRITE. */
struct rdma_krust_window_io {
	__u32 id;		/* the window's id */
	__u32 reserved;		/* must be zero */
	__aligned_u64 offset;	/* offset in the window */
	__aligned_u64 buf;	/* user pointer */
	__aligned_u64 len;	/* offset + len must be within the window */
};

/* Argument of RDMA_KRUST_IOCTL_RDMA_WRITE and _RDMA_READ. */
struct rdma_krust_rdma {
	__aligned_u64 remote_addr;	/* peer address (from its window) */
	__u32 rkey;			/* peer key */
	__u32 timeout_ms;		/* 0: the transport's verdict */
	__aligned_u64 buf;		/* user pointer: source or destination */
	__aligned_u64 len;		/* 1 to RDMA_KRUST_MAX_MSG_SIZE */
};

/* rdma_krust_atomic_op.op. */
#define RDMA_KRUST_ATOMIC_CMP_SWAP	0
#define RDMA_KRUST_ATOMIC_FETCH_ADD	1

/* Argument of RDMA_KRUST_IOCTL_ATOMIC. */
struct rdma_krust_atomic_op {
	__aligned_u64 remote_addr;	/* peer address, 8-byte aligned */
	__u32 rkey;			/* peer key */
	__u32 op;			/* RDMA_KRUST_ATOMIC_* */
	__aligned_u64 compare_add;	/* CAS: expected; FADD: added */
	__aligned_u64 swap;		/* CAS: stored on a match; FADD: 0 */
	__u32 timeout_ms;		/* 0: the transport's verdict */
	__u32 reserved;			/* must be zero */
	__aligned_u64 result;		/* out: the remote value before */
};

/* rdma_krust_bench.op. */
#define RDMA_KRUST_BENCH_SEND		0	/* needs raw connections */
#define RDMA_KRUST_BENCH_WRITE		1
#define RDMA_KRUST_BENCH_READ		2
#define RDMA_KRUST_BENCH_CAS		3	/* 8 bytes */
#define RDMA_KRUST_BENCH_FADD		4	/* 8 bytes */

/* rdma_krust_bench.mode. */
#define RDMA_KRUST_BENCH_LAT		0	/* one operation at a time */
#define RDMA_KRUST_BENCH_BW		1	/* depth operations in flight */
#define RDMA_KRUST_BENCH_RESPOND	2	/* the other end of a ping-pong */
#define RDMA_KRUST_BENCH_SINK		3	/* SEND bandwidth's other end */
#define RDMA_KRUST_BENCH_PINGPONG	4	/* WRITE latency as
						 * ib_write_lat measures it */

/* Largest rdma_krust_bench.iters. */
#define RDMA_KRUST_BENCH_MAX_ITERS	1000000
/* Largest rdma_krust_bench.depth. */
#define RDMA_KRUST_BENCH_MAX_DEPTH	64

/* Argument of RDMA_KRUST_IOCTL_BENCH: a benchmark loop in the kernel. */
struct rdma_krust_bench {
	__u32 op;		/* RDMA_KRUST_BENCH_SEND ... _FADD */
	__u32 mode;		/* RDMA_KRUST_BENCH_LAT ... _PINGPONG */
	__u32 size;		/* bytes per operation; 8 for atomics */
	__u32 iters;		/* 1 to RDMA_KRUST_BENCH_MAX_ITERS */
	__u32 depth;		/* bandwidth: 1 to RDMA_KRUST_BENCH_MAX_DEPTH */
	__u32 timeout_ms;	/* per event; see Documentation/ioctl-abi.rst */
	__aligned_u64 remote_addr; /* one-sided: the peer's window */
	__u32 rkey;		/* one-sided: the peer's key */
	__u32 window;		/* WRITE ping-pong: this fd's window; else 0 */
	__aligned_u64 samples;	/* latency: user pointer to __u64[iters] of
				 * nanoseconds, each from a post to the next
				 * (halved for SEND and the WRITE ping-pong);
				 * bandwidth: to __u64[2 * iters],
				 * each post's time then each completion's, ns
				 * from the first post; or 0 */
	__aligned_u64 total_ns;	/* out: first post to last completion;
				 * latency: to the end of the last sample */
	__aligned_u64 bytes;	/* out: bytes moved */
	__aligned_u64 best_ns;	/* out, bandwidth: shortest time of depth
				 * consecutive completions */
};

/* Wait used when a request's timeout_ms is 0, for what depends on the peer. */
#define RDMA_KRUST_DEFAULT_TIMEOUT_MS	10000

/* The message protocol on the wire (Documentation/wire-protocol.rst). */

/* Largest message of RDMA_KRUST_IOCTL_SEND / _RECV. */
#define RDMA_KRUST_MAX_MSG_SIZE		(2 << 20)
/* Receives a side keeps posted: the most, and a raw connection's default;
 * each side tells its peer its own in its setup data
 * (RDMA_KRUST_SETUP_DATA_SIZE). */
#define RDMA_KRUST_RECV_DEPTH		40
/* A message connection's default receive depth. */
#define RDMA_KRUST_MSG_RECV_DEPTH	16
/* The least receive depth. */
#define RDMA_KRUST_MIN_RECV_DEPTH	2
/* Size of each receive buffer of a raw connection. */
#define RDMA_KRUST_RECV_BUF_SIZE	65536
/* Size of each receive buffer of a message connection. */
#define RDMA_KRUST_MSG_RECV_BUF_SIZE	8192
/* Size of the header in front of every message. */
#define RDMA_KRUST_WIRE_HDR_SIZE	16
/* Longest message sent inline, in the SEND after its header; a longer one
 * is announced and the receiver READs it. */
#define RDMA_KRUST_MAX_INLINE_MSG	8176
/* An announce names at most this many segments of the sender's memory... */
#define RDMA_KRUST_READ_SEGS		8
/* ... each of at most this many bytes. */
#define RDMA_KRUST_READ_SEG_SIZE	(256 << 10)
/* Announces a side may have waiting for the peer's DONE at once: the next
 * may go while the peer READs the one before. */
#define RDMA_KRUST_ANNOUNCE_WINDOW	2
/* Size of one segment in an announce: {be64 addr, be32 rkey, be32 len}. */
#define RDMA_KRUST_READ_SEG_WIRE_SIZE	16
/* Setup data: the private data of a connect request or reply, 8 bytes,
 * {'R', 'K', RDMA_KRUST_WIRE_VERSION, u8 setup flags, be32 recv_depth}. */
#define RDMA_KRUST_SETUP_DATA_SIZE	8
/* Setup flag: this side READs announced messages. */
#define RDMA_KRUST_SETUP_READS		1

/* Wire-header flags. */
#define RDMA_KRUST_WIRE_FIRST		1	/* first SEND of a message */
#define RDMA_KRUST_WIRE_LAST		2	/* last SEND of a message */
#define RDMA_KRUST_WIRE_CREDIT		4	/* no message, only credits
						 * (and DONE) */
#define RDMA_KRUST_WIRE_LOW		8	/* the sender has fewer than 2
						 * credits left */
#define RDMA_KRUST_WIRE_READ		16	/* an announce: the payload
						 * names the segments to READ */
#define RDMA_KRUST_WIRE_DONE		32	/* the sender has READ the
						 * receiver's announce */
/* Every flag a header of RDMA_KRUST_WIRE_VERSION may carry. */
#define RDMA_KRUST_WIRE_FLAGS		63
/* Version byte of the wire header and of the setup data. */
#define RDMA_KRUST_WIRE_VERSION		2

/*
 * SEND bandwidth on iWARP (no receiver-not-ready retry): the sink sends
 * back an 8-byte big-endian count of the messages it has reposted a
 * receive for, after every this many and after the last.
 */
#define RDMA_KRUST_BENCH_COUNT_EVERY	8

/* The commands. */
#define RDMA_KRUST_IOCTL_VERSION \
	_IOR(RDMA_KRUST_IOC_MAGIC, 0x00, struct rdma_krust_version)
#define RDMA_KRUST_IOCTL_LIST_DEVICES \
	_IOWR(RDMA_KRUST_IOC_MAGIC, 0x01, struct rdma_krust_device_list)
#define RDMA_KRUST_IOCTL_CONNECT \
	_IOWR(RDMA_KRUST_IOC_MAGIC, 0x10, struct rdma_krust_connect_req)
#define RDMA_KRUST_IOCTL_LISTEN \
	_IOW(RDMA_KRUST_IOC_MAGIC, 0x11, struct rdma_krust_listen_req)
#define RDMA_KRUST_IOCTL_ACCEPT \
	_IOWR(RDMA_KRUST_IOC_MAGIC, 0x12, struct rdma_krust_accept_req)
#define RDMA_KRUST_IOCTL_CONN_INFO \
	_IOR(RDMA_KRUST_IOC_MAGIC, 0x13, struct rdma_krust_conn_info)
#define RDMA_KRUST_IOCTL_DISCONNECT \
	_IO(RDMA_KRUST_IOC_MAGIC, 0x14)
#define RDMA_KRUST_IOCTL_SEND \
	_IOW(RDMA_KRUST_IOC_MAGIC, 0x20, struct rdma_krust_xfer)
#define RDMA_KRUST_IOCTL_RECV \
	_IOWR(RDMA_KRUST_IOC_MAGIC, 0x21, struct rdma_krust_xfer)
#define RDMA_KRUST_IOCTL_EXPOSE \
	_IOWR(RDMA_KRUST_IOC_MAGIC, 0x30, struct rdma_krust_expose)
#define RDMA_KRUST_IOCTL_REVOKE \
	_IOW(RDMA_KRUST_IOC_MAGIC, 0x31, struct rdma_krust_revoke)
#define RDMA_KRUST_IOCTL_WINDOW_READ \
	_IOW(RDMA_KRUST_IOC_MAGIC, 0x32, struct rdma_krust_window_io)
#define RDMA_KRUST_IOCTL_WINDOW_WRITE \
	_IOW(RDMA_KRUST_IOC_MAGIC, 0x33, struct rdma_krust_window_io)
#define RDMA_KRUST_IOCTL_RDMA_WRITE \
	_IOW(RDMA_KRUST_IOC_MAGIC, 0x34, struct rdma_krust_rdma)
#define RDMA_KRUST_IOCTL_RDMA_READ \
	_IOW(RDMA_KRUST_IOC_MAGIC, 0x35, struct rdma_krust_rdma)
#define RDMA_KRUST_IOCTL_ATOMIC \
	_IOWR(RDMA_KRUST_IOC_MAGIC, 0x36, struct rdma_krust_atomic_op)
#define RDMA_KRUST_IOCTL_BENCH \
	_IOWR(RDMA_KRUST_IOC_MAGIC, 0x40, struct rdma_krust_bench)

#endif /* _UAPI_LINUX_RDMA_KRUST_H */
