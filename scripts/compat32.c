// SPDX-License-Identifier: GPL-2.0
/*
 * A 32-bit caller of /dev/rdma_krust (built with gcc -m32 -static), for the
 * guest test compat_ioctl_32bit_caller. The ABI (src/abi.rs) promises the
 * same layouts to 32- and 64-bit callers; on a 64-bit kernel a 32-bit
 * process's ioctls go through the file's compat_ioctl, which the module
 * must provide. The layouts below are checked against the Rust ones by
 * size here and by the numbers the module reports.
 *
 * Prints one line per check; exits 0 only if all pass.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/types.h>

#define RK_MAGIC 0xb9
#define RK_MAX_CMDS 32

struct rk_version {
	__u32 abi_version;
	__u32 n_cmds;
	__u32 cmds[RK_MAX_CMDS];
};

struct rk_device_info {
	char name[64];
	__aligned_u64 node_guid;
	__aligned_u64 max_mr_size;
	__u32 max_qp_rd_atom;
	__u32 max_qp_init_rd_atom;
	__u32 atomic_cap;
	__u32 num_ports;
	__u8 ports[4][16];
};

struct rk_device_list {
	__aligned_u64 devices;
	__u32 capacity;
	__u32 count;
	__aligned_u64 reserved;
};

_Static_assert(sizeof(struct rk_version) == 136, "Version");
_Static_assert(sizeof(struct rk_device_info) == 160, "DeviceInfo");
_Static_assert(sizeof(struct rk_device_list) == 24, "DeviceList");
_Static_assert(sizeof(void *) == 4, "build this with -m32");

#define RK_VERSION _IOR(RK_MAGIC, 0x00, struct rk_version)
/* src/abi.rs's ABI_VERSION; userspace-peer/tests/abi.rs checks they agree. */
#define RK_ABI_VERSION 5
#define RK_LIST_DEVICES _IOWR(RK_MAGIC, 0x01, struct rk_device_list)

static int failed;

static void check(int ok, const char *what)
{
	printf("%s %s\n", ok ? "ok" : "FAIL", what);
	if (!ok)
		failed = 1;
}

int main(int argc, char **argv)
{
	const char *want = argc > 1 ? argv[1] : "rxe0";
	struct rk_device_info devs[8];
	struct rk_device_list list;
	struct rk_version v;
	int fd, r, found = 0;
	unsigned int i;

	fd = open("/dev/rdma_krust", O_RDWR);
	if (fd < 0) {
		perror("open /dev/rdma_krust");
		return 1;
	}

	memset(&v, 0, sizeof(v));
	r = ioctl(fd, RK_VERSION, &v);
	printf("VERSION: %d (%s), abi %u, %u commands\n", r,
	       r ? strerror(errno) : "ok", v.abi_version, v.n_cmds);
	check(r == 0 && v.abi_version == RK_ABI_VERSION, "IOCTL_VERSION from a 32-bit caller");
	check(r == 0 && v.n_cmds > 1 && v.cmds[0] == RK_VERSION &&
		      v.cmds[1] == RK_LIST_DEVICES,
	      "the module's command numbers are the 32-bit caller's");

	memset(&list, 0, sizeof(list));
	memset(devs, 0, sizeof(devs));
	list.devices = (uintptr_t)devs;
	list.capacity = 8;
	r = ioctl(fd, RK_LIST_DEVICES, &list);
	for (i = 0; r == 0 && i < list.count && i < 8; i++)
		found |= strcmp(devs[i].name, want) == 0;
	printf("LIST_DEVICES: %d (%s), %u devices\n", r,
	       r ? strerror(errno) : "ok", list.count);
	check(r == 0 && found, "IOCTL_LIST_DEVICES through a 32-bit pointer");

	list.devices = 8; /* unmapped */
	r = ioctl(fd, RK_LIST_DEVICES, &list);
	check(r == -1 && errno == EFAULT, "a bad 32-bit pointer: EFAULT");

	r = ioctl(fd, _IO(RK_MAGIC, 0x7f), 0);
	check(r == -1 && errno == ENOTTY, "an unknown command: ENOTTY");

	close(fd);
	return failed;
}
