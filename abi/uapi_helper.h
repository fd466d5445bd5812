/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bindgen's input for the ioctl ABI, include/uapi/linux/rdma_krust.h: the
 * module's bindings/uapi_generated.rs (Kbuild) and the rdma-krust-abi
 * crate's uapi.rs (abi/build.rs) are both generated from it.
 *
 * bindgen evaluates object-like macros but not _IOR() and friends, which
 * take sizeof(); a const initialised from each command number carries it
 * across, as the kernel's rust/bindings/bindings_helper.h does for
 * GFP_KERNEL. Every RDMA_KRUST_IOCTL_* of the header has its line here
 * (abi/tests/uapi_header.rs checks that).
 */
#include "../include/uapi/linux/rdma_krust.h"

#define RKRUST_CMD(name) const __u32 RKRUST_CMD_##name = RDMA_KRUST_IOCTL_##name

RKRUST_CMD(VERSION);
RKRUST_CMD(LIST_DEVICES);
RKRUST_CMD(CONNECT);
RKRUST_CMD(LISTEN);
RKRUST_CMD(ACCEPT);
RKRUST_CMD(CONN_INFO);
RKRUST_CMD(DISCONNECT);
RKRUST_CMD(SEND);
RKRUST_CMD(RECV);
RKRUST_CMD(EXPOSE);
RKRUST_CMD(REVOKE);
RKRUST_CMD(WINDOW_READ);
RKRUST_CMD(WINDOW_WRITE);
RKRUST_CMD(RDMA_WRITE);
RKRUST_CMD(RDMA_READ);
RKRUST_CMD(ATOMIC);
RKRUST_CMD(BENCH);
