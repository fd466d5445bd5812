// SPDX-License-Identifier: GPL-2.0
/*
 * A C caller of /dev/rdma_krust, built on the uapi header
 * (include/uapi/linux/rdma_krust.h) as a C user would build it, twice:
 * with gcc -m32 -static for the guest test compat_ioctl_32bit_caller, and
 * 64-bit for uapi_header_c_program. The header, the ABI's one definition,
 * promises the same layouts to 32- and 64-bit callers; on a 64-bit kernel a
 * 32-bit process's ioctls go through the file's compat_ioctl, which the
 * module must provide. abi/tests/uapi_header.rs (cargo test) checks
 * the layouts on both widths; the sizes are checked again here.
 *
 * Lists the devices, then prints one line per check; exits 0 only if all
 * pass.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/rdma_krust.h>

_Static_assert(sizeof(struct rdma_krust_version) == 136, "Version");
_Static_assert(sizeof(struct rdma_krust_device_info) == 168, "DeviceInfo");
_Static_assert(sizeof(struct rdma_krust_device_list) == 24, "DeviceList");

#define BITS (8 * (int)sizeof(void *))

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
	struct rdma_krust_device_info devs[8];
	struct rdma_krust_device_list list;
	struct rdma_krust_version v;
	int fd, r, found = 0;
	unsigned int i;

	fd = open("/dev/rdma_krust", O_RDWR);
	if (fd < 0) {
		perror("open /dev/rdma_krust");
		return 1;
	}

	memset(&v, 0, sizeof(v));
	r = ioctl(fd, RDMA_KRUST_IOCTL_VERSION, &v);
	printf("VERSION: %d (%s), abi %u, %u commands\n", r,
	       r ? strerror(errno) : "ok", v.abi_version, v.n_cmds);
	check(r == 0 && v.abi_version == RDMA_KRUST_ABI_VERSION, "IOCTL_VERSION: the header's ABI version");
	check(r == 0 && v.n_cmds > 1 && v.cmds[0] == RDMA_KRUST_IOCTL_VERSION &&
		      v.cmds[1] == RDMA_KRUST_IOCTL_LIST_DEVICES,
	      "the module's command numbers are the header's");

	memset(&list, 0, sizeof(list));
	memset(devs, 0, sizeof(devs));
	list.devices = (uintptr_t)devs;
	list.capacity = 8;
	r = ioctl(fd, RDMA_KRUST_IOCTL_LIST_DEVICES, &list);
	printf("LIST_DEVICES: %d (%s), %u devices\n", r,
	       r ? strerror(errno) : "ok", list.count);
	for (i = 0; r == 0 && i < list.count && i < 8; i++) {
		printf("device %s: %u ports, max_qp_rd_atom %u, atomic_cap %u\n",
		       (const char *)devs[i].name, devs[i].num_ports,
		       devs[i].max_qp_rd_atom, devs[i].atomic_cap);
		found |= strcmp((const char *)devs[i].name, want) == 0;
	}
	printf("checking as a %d-bit caller\n", BITS);
	check(r == 0 && found, "IOCTL_LIST_DEVICES lists the device, through this caller's pointer");

	list.devices = 8; /* unmapped */
	r = ioctl(fd, RDMA_KRUST_IOCTL_LIST_DEVICES, &list);
	check(r == -1 && errno == EFAULT, "a bad pointer: EFAULT");

	r = ioctl(fd, _IO(RDMA_KRUST_IOC_MAGIC, 0x7f), 0);
	check(r == -1 && errno == ENOTTY, "an unknown command: ENOTTY");

	close(fd);
	return failed;
}
