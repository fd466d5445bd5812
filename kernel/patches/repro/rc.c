// SPDX-License-Identifier: GPL-2.0
/*
 * rc: RC traffic over librdmacm and libibverbs for the provider fixes'
 * reproducers (kernel/patches/repro/), with nothing but rdma-core.
 *
 *   rc reads ADDR PORT ROUNDS
 *	Both ends in this process. Per round the active end posts RDMA READs
 *	in batches of 8 while the passive end disconnects after a random
 *	1-20 ms; every completion is counted by wr_id. Prints each wr_id
 *	completed twice and stops after that round. Exit 1 if any was.
 *
 *   rc send ADDR PORT SIZE COUNT
 *	Active end only (the peer is another program). Posts COUNT SENDs of
 *	SIZE bytes, each starting with its number (u32, big endian), 16 at
 *	a time, until one fails. Prints "failed SEQ STATUS" for a SEND that
 *	completed with an error other than a flush, then "sent N".
 *
 *   rc retry ADDR PORT SECONDS CONNS MIX
 *	CONNS connections, both ends in this process, with the local ACK
 *	timeout exponent 1 on both ends, for SECONDS. MIX "atomic": a 16 KiB
 *	SEND, a FETCH_AND_ADD of 1 and a 32 KiB READ per step, the add's
 *	old value and the read's data checked; MIX "send": four 8 KiB SENDs
 *	and a 16 KiB WRITE per step; MIX "all": two 16 KiB SENDs, a 16 KiB
 *	WRITE, the FETCH_AND_ADD and the READ; MIX "stream": 16 KiB SENDs
 *	and WRITEs, two to one, 32 in flight; MIX "bind": 512-byte SENDs, 32
 *	in flight, every fourth request a local operation on a type 2
 *	memory window of the active end, BIND_MW and LOCAL_INV in turn. The
 *	passive end checks each message's length and bytes. Exit 1 on wrong
 *	data, a failed completion or none for 10 s.
 *
 * Exit 2: could not run (no device, no connection).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define BATCH 8
#define WINDOW 16
#define RECVS 64

struct region {
	uint64_t addr;
	uint32_t rkey;
	uint32_t pad;
};

static void die(const char *what)
{
	fprintf(stderr, "rc: %s: %s\n", what, strerror(errno));
	exit(2);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct rdma_addrinfo *resolve(const char *addr, const char *port,
				     int passive)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP };
	struct rdma_addrinfo *res;

	if (passive)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(addr, port, &hints, &res))
		die("rdma_getaddrinfo");
	return res;
}

static struct ibv_qp_init_attr qp_attr(int sq, int rq)
{
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = sq, .max_recv_wr = rq,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};
	return attr;
}

static void set_ack_timeout(struct rdma_cm_id *id, uint8_t t)
{
	if (t && rdma_set_option(id, RDMA_OPTION_ID,
				 RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t)))
		die("rdma_set_option(ACK_TIMEOUT)");
}

static struct rdma_cm_id *listener(const char *addr, const char *port,
				   struct ibv_qp_init_attr *attr)
{
	struct rdma_addrinfo *res = resolve(addr, port, 1);
	struct rdma_cm_id *id;

	if (rdma_create_ep(&id, res, NULL, attr))
		die("rdma_create_ep(listen)");
	rdma_freeaddrinfo(res);
	if (rdma_listen(id, 16))
		die("rdma_listen");
	return id;
}

/* Connect; the peer's region, if it sent one, into @reg. */
static struct rdma_cm_id *connect_one(const char *addr, const char *port,
				      struct ibv_qp_init_attr *attr,
				      struct region *reg, uint8_t timeout)
{
	struct rdma_conn_param param = {
		.responder_resources = 16, .initiator_depth = 16,
		.retry_count = 7, .rnr_retry_count = 7,
	};
	struct rdma_addrinfo *res = resolve(addr, port, 0);
	struct rdma_cm_id *id;

	if (rdma_create_ep(&id, res, NULL, attr))
		die("rdma_create_ep");
	rdma_freeaddrinfo(res);
	set_ack_timeout(id, timeout);
	if (rdma_connect(id, &param))
		die("rdma_connect");
	if (reg && id->event &&
	    id->event->param.conn.private_data_len >= sizeof(*reg))
		memcpy(reg, id->event->param.conn.private_data, sizeof(*reg));
	return id;
}

static struct ibv_mr *reg(struct rdma_cm_id *id, void *buf, size_t len,
			  int access)
{
	struct ibv_mr *mr = ibv_reg_mr(id->pd, buf, len,
				       IBV_ACCESS_LOCAL_WRITE | access);

	if (!mr) {
		fprintf(stderr, "rc: ibv_reg_mr(%p, %zu, %#x): %s\n", buf, len,
			IBV_ACCESS_LOCAL_WRITE | access, strerror(errno));
		exit(2);
	}
	return mr;
}

static int post(struct rdma_cm_id *id, enum ibv_wr_opcode op, uint64_t wr_id,
		void *buf, uint32_t len, struct ibv_mr *mr,
		const struct region *peer, uint64_t offset)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1, .opcode = op }, *bad;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = peer->addr + offset;
		wr.wr.atomic.rkey = peer->rkey;
		wr.wr.atomic.compare_add = 1;
	} else if (op != IBV_WR_SEND) {
		wr.wr.rdma.remote_addr = peer->addr + offset;
		wr.wr.rdma.rkey = peer->rkey;
	}
	return ibv_post_send(id->qp, &wr, &bad);
}

static int post_recv(struct rdma_cm_id *id, uint64_t wr_id, void *buf,
		     uint32_t len, struct ibv_mr *mr)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len,
			       .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(id->qp, &wr, &bad);
}

/*
 * The passive end accepts from a thread while the active end connects
 * (rdma_connect() returns once the connection is established), offering
 * @buf, registered with @access on the new id's PD, in the private data.
 */
struct acceptor {
	struct rdma_cm_id *lid, *id;
	void *buf;
	size_t len;
	int access;
	uint8_t timeout;
	struct ibv_mr *mr;
};

static void *accept_thread(void *arg)
{
	struct acceptor *a = arg;
	struct region r;
	struct rdma_conn_param param = {
		.responder_resources = 16, .initiator_depth = 16,
		.retry_count = 7, .rnr_retry_count = 7,
		.private_data = &r, .private_data_len = sizeof(r),
	};

	if (rdma_get_request(a->lid, &a->id))
		die("rdma_get_request");
	a->mr = reg(a->id, a->buf, a->len, a->access);
	r.addr = (uintptr_t)a->buf;
	r.rkey = a->mr->rkey;
	set_ack_timeout(a->id, a->timeout);
	if (rdma_accept(a->id, &param))
		die("rdma_accept");
	return NULL;
}

/* Both ends of one connection: the active end's id, the peer's region. */
static struct rdma_cm_id *pair(struct acceptor *a, const char *addr,
			       const char *port, struct ibv_qp_init_attr *attr,
			       struct region *peer)
{
	struct rdma_cm_id *id;
	pthread_t t;

	pthread_create(&t, NULL, accept_thread, a);
	id = connect_one(addr, port, attr, peer, a->timeout);
	pthread_join(t, NULL);
	return id;
}

/* --- reads ------------------------------------------------------------ */

struct closer {
	struct rdma_cm_id *id;
	int delay_us;
};

static void *close_later(void *arg)
{
	struct closer *c = arg;

	usleep(c->delay_us);
	rdma_disconnect(c->id);
	return NULL;
}

static int reads(const char *addr, const char *port, int rounds)
{
	struct ibv_qp_init_attr attr = qp_attr(64, 1);
	struct rdma_cm_id *lid = listener(addr, port, &attr);
	static char src[4096], dst[4096];
	int bad_rounds = 0;

	for (int r = 1; r <= rounds; r++) {
		struct ibv_qp_init_attr cattr = qp_attr(64, 1);
		struct rdma_cm_id *cid, *sid;
		struct ibv_mr *smr, *dmr;
		struct region peer;
		struct closer c;
		pthread_t t;
		static unsigned char seen[1 << 20];
		/* wr_ids are never reused: a batch whose post failed may
		 * still have been queued and flushed. */
		uint64_t posted = 0, next_id = 0, done = 0, dups = 0;
		double last;
		int failed = 0;

		struct acceptor acc = { .lid = lid, .buf = src,
					.len = sizeof(src),
					.access = IBV_ACCESS_REMOTE_READ };

		cid = pair(&acc, addr, port, &cattr, &peer);
		sid = acc.id;
		smr = acc.mr;
		dmr = reg(cid, dst, sizeof(dst), 0);
		memset(seen, 0, sizeof(seen));

		c.id = sid;
		c.delay_us = 1000 + rand() % 20000;
		pthread_create(&t, NULL, close_later, &c);
		last = now();
		while (now() - last < 1.0 && next_id < sizeof(seen)) {
			struct ibv_wc wc[16];
			int n;

			if (!failed && posted - done <= BATCH) {
				struct ibv_sge sge[BATCH];
				struct ibv_send_wr wr[BATCH], *bad;

				for (int i = 0; i < BATCH; i++) {
					sge[i] = (struct ibv_sge){
						.addr = (uintptr_t)dst + 64 * i,
						.length = 64, .lkey = dmr->lkey };
					wr[i] = (struct ibv_send_wr){
						.wr_id = next_id + i,
						.next = i + 1 < BATCH ? &wr[i + 1] : NULL,
						.sg_list = &sge[i], .num_sge = 1,
						.opcode = IBV_WR_RDMA_READ,
						.wr.rdma.remote_addr = peer.addr + 64 * i,
						.wr.rdma.rkey = peer.rkey };
				}
				if (ibv_post_send(cid->qp, wr, &bad))
					failed = 1;
				else
					posted += BATCH;
				next_id += BATCH;
			}
			n = ibv_poll_cq(cid->send_cq, 16, wc);
			for (int i = 0; i < n; i++) {
				if (wc[i].wr_id >= next_id || seen[wc[i].wr_id]++) {
					printf("rc: round %d: READ %" PRIu64 " completed again (status %d)\n",
					       r, (uint64_t)wc[i].wr_id, wc[i].status);
					dups++;
				}
				if (wc[i].status)
					failed = 1;
				done++;
				last = now();
			}
			if (failed && done >= posted)
				usleep(1000);
		}
		pthread_join(t, NULL);
		if (r == 1 || dups)
			printf("rc: round %d: %" PRIu64 " READs posted, %" PRIu64 " completions, %" PRIu64 " repeated\n",
			       r, posted, done, dups);
		bad_rounds += dups > 0;
		rdma_disconnect(cid);
		ibv_dereg_mr(dmr);
		ibv_dereg_mr(smr);
		rdma_destroy_ep(cid);
		rdma_destroy_ep(sid);
		if (dups) {
			rounds = r;
			break;
		}
	}
	rdma_destroy_ep(lid);
	printf("rc: %d rounds, %d with a READ completed twice\n", rounds,
	       bad_rounds);
	return bad_rounds ? 1 : 0;
}

/* --- send ------------------------------------------------------------- */

static int sends(const char *addr, const char *port, uint32_t size,
		 uint32_t count)
{
	struct ibv_qp_init_attr attr = qp_attr(WINDOW, 1);
	struct rdma_cm_id *id = connect_one(addr, port, &attr, NULL, 0);
	char *buf = calloc(WINDOW, size);
	struct ibv_mr *mr = reg(id, buf, (size_t)WINDOW * size, 0);
	uint32_t posted = 0, done = 0, ok = 0, flushed = 0;
	int failed = 0;
	double last = now();

	while (now() - last < 2.0 && (done < posted || (!failed && posted < count))) {
		struct ibv_wc wc[16];
		int n;

		if (!failed && posted < count && posted - done < WINDOW) {
			char *b = buf + (size_t)(posted % WINDOW) * size;
			uint32_t seq = htonl(posted);

			memcpy(b, &seq, sizeof(seq));
			if (post(id, IBV_WR_SEND, posted, b, size, mr, NULL, 0))
				failed = 1;
			else
				posted++;
		}
		n = ibv_poll_cq(id->send_cq, 16, wc);
		for (int i = 0; i < n; i++) {
			if (wc[i].status == IBV_WC_SUCCESS)
				ok++;
			else if (wc[i].status == IBV_WC_WR_FLUSH_ERR)
				flushed++;
			else
				printf("failed %" PRIu64 " %d\n",
				       (uint64_t)wc[i].wr_id, wc[i].status);
			if (wc[i].status)
				failed = 1;
			done++;
			last = now();
		}
	}
	printf("sent %u, flushed %u, of %u posted\n", ok, flushed, posted);
	rdma_disconnect(id);
	ibv_dereg_mr(mr);
	rdma_destroy_ep(id);
	return 0;
}

/* --- retry ------------------------------------------------------------ */

#define SEND_LEN 16384
#define SMALL_SEND_LEN 8192
#define READ_LEN 32768
#define WRITE_LEN 16384
#define BIND_SEND_LEN 512
/* The passive end's region: READ source, the counter, WRITE sink. */
#define WRITE_AT (READ_LEN + 4096)
#define TARGET_LEN (WRITE_AT + WRITE_LEN)

struct conn {
	int atomic, write, nsend; /* the mix: FETCH_AND_ADD and READ, WRITE, SENDs */
	int bind; /* MIX "bind": small SENDs, BIND_MW and LOCAL_INV */
	double end;
	struct rdma_cm_id *cid, *sid;
	struct region peer;
	char *target; /* passive end: READ source, WRITE sink, counter */
	uint64_t steps, wrong, lost, msgs;
	volatile int stop;
};

static int msg_len(struct conn *c)
{
	if (c->bind)
		return BIND_SEND_LEN;
	return c->nsend > 2 ? SMALL_SEND_LEN : SEND_LEN;
}

static void fill(char *b, int len, uint32_t seq)
{
	for (int i = 0; i < len; i++)
		b[i] = (char)(seq * 31 + i);
}

static void *passive_end(void *arg)
{
	struct conn *c = arg;
	int len = msg_len(c);
	char *bufs = malloc((size_t)RECVS * len);
	struct ibv_mr *mr = reg(c->sid, bufs, (size_t)RECVS * len, 0);
	uint32_t next = 0;

	for (int i = 0; i < RECVS; i++)
		if (post_recv(c->sid, i, bufs + (size_t)i * len, len, mr))
			die("ibv_post_recv");
	while (!c->stop) {
		struct ibv_wc wc[16];
		int n = ibv_poll_cq(c->sid->recv_cq, 16, wc);

		for (int i = 0; i < n; i++) {
			char *b = bufs + (size_t)wc[i].wr_id * len;
			char want[SEND_LEN];

			if (wc[i].status) {
				if (!c->stop && wc[i].status != IBV_WC_WR_FLUSH_ERR) {
					printf("rc: message %u: receive status %d (%s)\n",
					       next, wc[i].status,
					       ibv_wc_status_str(wc[i].status));
					c->lost++;
				}
				c->stop = 1;
				break;
			}
			fill(want, len, next);
			if (wc[i].byte_len != (uint32_t)len ||
			    memcmp(b, want, len)) {
				printf("rc: message %u: %u bytes, not the %d sent, or other bytes\n",
				       next, wc[i].byte_len, len);
				c->wrong++;
			}
			next++;
			c->msgs++;
			if (post_recv(c->sid, wc[i].wr_id, b, len, mr))
				c->stop = 1;
		}
	}
	return NULL;
}

/* An active end is done: stop its passive end too. */
static void *stop(struct conn *c, int lost)
{
	c->lost += lost;
	c->stop = 1;
	return NULL;
}

static void *active_end(void *arg)
{
	struct conn *c = arg;
	int len = msg_len(c), nsend = c->nsend;
	char *sbuf = malloc((size_t)4 * SEND_LEN);
	char *rbuf = malloc(READ_LEN + 8);
	char want[READ_LEN];
	struct ibv_mr *smr = reg(c->cid, sbuf, (size_t)4 * SEND_LEN, 0);
	struct ibv_mr *rmr = reg(c->cid, rbuf, READ_LEN + 8, 0);
	uint64_t *old = (uint64_t *)(rbuf + READ_LEN);
	uint32_t seq = 0;

	for (int i = 0; i < READ_LEN; i++)
		want[i] = (char)(i * 7);
	while (!c->stop && now() < c->end) {
		int expect = 0;

		for (int i = 0; i < nsend; i++) {
			fill(sbuf + i * len, len, seq++);
			if (post(c->cid, IBV_WR_SEND, 1, sbuf + i * len, len,
				 smr, NULL, 0))
				goto lost;
			expect++;
		}
		if (c->atomic) {
			memset(rbuf, 0, READ_LEN);
			*old = 0xdeadbeefdeadbeefULL;
			if (post(c->cid, IBV_WR_ATOMIC_FETCH_AND_ADD, 2, old, 8,
				 rmr, &c->peer, READ_LEN) ||
			    post(c->cid, IBV_WR_RDMA_READ, 3, rbuf, READ_LEN,
				 rmr, &c->peer, 0))
				goto lost;
			expect += 2;
		}
		if (c->write) {
			if (post(c->cid, IBV_WR_RDMA_WRITE, 4, sbuf, WRITE_LEN,
				 smr, &c->peer, WRITE_AT))
				goto lost;
			expect++;
		}
		double since = now();

		while (expect && !c->stop) {
			struct ibv_wc wc[8];
			int n = ibv_poll_cq(c->cid->send_cq, 8, wc);

			if (n == 0 && now() - since > 10) {
				printf("rc: step %" PRIu64 ": no completion for 10 s\n",
				       c->steps);
				goto lost;
			}
			for (int i = 0; i < n; i++, expect--) {
				if (wc[i].status) {
					printf("rc: step %" PRIu64 ": completion status %d (%s)\n",
					       c->steps, wc[i].status,
					       ibv_wc_status_str(wc[i].status));
					goto lost;
				}
			}
		}
		if (c->atomic) {
			if (*old != c->steps) {
				printf("rc: step %" PRIu64 ": FETCH_AND_ADD returned %#" PRIx64 ", not %" PRIu64 "\n",
				       c->steps, *old, c->steps);
				c->wrong++;
			}
			if (memcmp(rbuf, want, READ_LEN)) {
				printf("rc: step %" PRIu64 ": READ returned other bytes\n",
				       c->steps);
				c->wrong++;
			}
		}
		c->steps++;
	}
	return stop(c, 0);
lost:
	return stop(c, 1);
}

/*
 * MIX "bind", request @n: a local operation on the type 2 window @mw, a
 * BIND_MW over @mr and a LOCAL_INV of it in turn, every fourth request.
 */
static int is_local_op(uint64_t n)
{
	return n % 4 == 3;
}

static int post_local_op(struct rdma_cm_id *id, uint64_t n, struct ibv_mw *mw,
			 struct ibv_mr *mr)
{
	struct ibv_send_wr wr = { .wr_id = n }, *bad;

	if (n % 8 == 3) {
		/* The key stays: the window's rkey is the same in both. */
		wr.opcode = IBV_WR_BIND_MW;
		wr.bind_mw.mw = mw;
		wr.bind_mw.rkey = mw->rkey;
		wr.bind_mw.bind_info.mr = mr;
		wr.bind_mw.bind_info.addr = (uintptr_t)mr->addr;
		wr.bind_mw.bind_info.length = 4096;
		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	} else {
		wr.opcode = IBV_WR_LOCAL_INV;
		wr.invalidate_rkey = mw->rkey;
	}
	return ibv_post_send(id->qp, &wr, &bad);
}

static const char *request_name(struct conn *c, uint64_t n)
{
	if (c->bind)
		return !is_local_op(n) ? "SEND" : n % 8 == 3 ? "BIND_MW" : "LOCAL_INV";
	return n % 3 == 2 ? "WRITE" : "SEND";
}

/*
 * MIX "stream": SENDs and WRITEs of 16 KiB, two to one, 32 in flight;
 * MIX "bind": 512-byte SENDs and local operations, three to one.
 */
static void *active_stream(void *arg)
{
	struct conn *c = arg;
	int len = msg_len(c);
	char *sbuf = aligned_alloc(4096, (size_t)WINDOW * 2 * SEND_LEN);
	struct ibv_mr *smr = reg(c->cid, sbuf, (size_t)WINDOW * 2 * SEND_LEN,
				 c->bind ? IBV_ACCESS_MW_BIND : 0);
	struct ibv_mw *mw = NULL;
	uint64_t posted = 0, done = 0;
	uint32_t seq = 0;
	double since = now();

	if (c->bind) {
		mw = ibv_alloc_mw(c->cid->pd, IBV_MW_TYPE_2);
		if (!mw)
			die("ibv_alloc_mw(type 2)");
	}

	while (!c->stop && (now() < c->end || done < posted)) {
		struct ibv_wc wc[16];
		int n;

		while (now() < c->end && posted - done < 2 * WINDOW) {
			char *b = sbuf + (posted % (2 * WINDOW)) * SEND_LEN;
			int write = !c->bind && posted % 3 == 2;

			if (c->bind && is_local_op(posted)) {
				if (post_local_op(c->cid, posted, mw, smr))
					goto lost;
				posted++;
				continue;
			}
			if (!write)
				fill(b, len, seq++);
			if (post(c->cid, write ? IBV_WR_RDMA_WRITE : IBV_WR_SEND,
				 posted, b, len, smr, &c->peer, WRITE_AT))
				goto lost;
			posted++;
		}
		n = ibv_poll_cq(c->cid->send_cq, 16, wc);
		if (n > 0)
			since = now();
		else if (now() - since > 10) {
			printf("rc: request %" PRIu64 ": no completion for 10 s\n",
			       done);
			goto lost;
		}
		for (int i = 0; i < n; i++, done++) {
			if (wc[i].status) {
				printf("rc: request %" PRIu64 " (%s): completion status %d (%s)\n",
				       (uint64_t)wc[i].wr_id,
				       request_name(c, wc[i].wr_id), wc[i].status,
				       ibv_wc_status_str(wc[i].status));
				goto lost;
			}
		}
		c->steps = done;
	}
	return stop(c, 0);
lost:
	return stop(c, 1);
}

/* The mixes active_stream() runs: a window of requests, not steps. */
static int is_stream(const char *mix)
{
	return !strcmp(mix, "stream") || !strcmp(mix, "bind");
}

static int retry(const char *addr, const char *port, int seconds, int nconn,
		 const char *mix)
{
	struct ibv_qp_init_attr attr = qp_attr(16, RECVS);
	struct rdma_cm_id *lid = listener(addr, port, &attr);
	struct conn *conns = calloc(nconn, sizeof(*conns));
	pthread_t *t = calloc(2 * nconn, sizeof(*t));
	uint64_t steps = 0, wrong = 0, lost = 0, msgs = 0;

	for (int i = 0; i < nconn; i++) {
		struct conn *c = &conns[i];
		struct ibv_qp_init_attr cattr = qp_attr(16, 1);

		int stream = is_stream(mix);

		c->bind = !strcmp(mix, "bind");
		c->atomic = strcmp(mix, "send") && !stream;
		c->write = strcmp(mix, "atomic") != 0;
		c->nsend = !strcmp(mix, "send") ? 4 : !strcmp(mix, "all") ? 2 : 1;
		if (stream)
			cattr.cap.max_send_wr = 2 * WINDOW;
		c->target = aligned_alloc(4096, TARGET_LEN);
		for (int j = 0; j < READ_LEN; j++)
			c->target[j] = (char)(j * 7);
		memset(c->target + READ_LEN, 0, 8);
		struct acceptor a = {
			.lid = lid, .buf = c->target, .len = TARGET_LEN,
			.access = IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_ATOMIC,
			.timeout = 1,
		};

		c->cid = pair(&a, addr, port, &cattr, &c->peer);
		c->sid = a.id;
	}
	for (int i = 0; i < nconn; i++) {
		conns[i].end = now() + seconds;
		pthread_create(&t[2 * i], NULL, passive_end, &conns[i]);
		pthread_create(&t[2 * i + 1], NULL,
			       is_stream(mix) ? active_stream : active_end,
			       &conns[i]);
	}
	for (int i = 0; i < nconn; i++) {
		pthread_join(t[2 * i + 1], NULL);
		conns[i].stop = 1;
		pthread_join(t[2 * i], NULL);
		steps += conns[i].steps;
		wrong += conns[i].wrong;
		lost += conns[i].lost;
		msgs += conns[i].msgs;
	}
	printf("rc: %d connections, %d s, mix %s: %" PRIu64 " steps, %" PRIu64 " messages received, %" PRIu64 " wrong results, %" PRIu64 " connections lost\n",
	       nconn, seconds, mix, steps, msgs, wrong, lost);
	/* No teardown: exiting closes the ids (rdma_disconnect() could wait
	 * out a lost connection's CM timeouts). */
	return wrong || lost ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand(getpid());
	if (argc == 5 && !strcmp(argv[1], "reads"))
		return reads(argv[2], argv[3], atoi(argv[4]));
	if (argc == 6 && !strcmp(argv[1], "send"))
		return sends(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]));
	if (argc == 7 && !strcmp(argv[1], "retry"))
		return retry(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]),
			     argv[6]);
	fprintf(stderr, "usage: rc reads ADDR PORT ROUNDS | rc send ADDR PORT SIZE COUNT | rc retry ADDR PORT SECONDS CONNS atomic|send|all|stream|bind\n");
	return 2;
}
