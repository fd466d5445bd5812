// SPDX-License-Identifier: GPL-2.0

//! The `/dev/rdma_krust` ioctl ABI: the one definition.
//!
//! This file is compiled twice: into the kernel module (as `crate::abi`) and
//! into the userspace tool (`userspace-peer`, through `#[path]`). It therefore
//! uses nothing but `core`. Every structure is `#[repr(C)]`, has no implicit
//! padding, and carries user pointers as `u64`, so the layout is the same for
//! 32-bit and 64-bit callers.
//!
//! Conventions, as in the kernel's own uAPI headers:
//! - `reserved` fields must be zero on input (`EINVAL` otherwise) and are
//!   zeroed on output;
//! - an unknown command is `ENOTTY`; a known command number with the wrong
//!   size or direction is `EINVAL`; an unreadable or unwritable user pointer is
//!   `EFAULT`.
//!
//! See `Documentation/ioctl-abi.rst`.

/// Version of this ABI. Bumped on any incompatible change.
pub const ABI_VERSION: u32 = 1;

/// The ioctl "type" byte (see `Documentation/userspace-api/ioctl/ioctl-number.rst`).
pub const IOC_MAGIC: u32 = 0xb9;

/// Length of [`DeviceInfo::name`], including the terminating NUL.
pub const DEVICE_NAME_LEN: usize = 64;

/// Ports reported per device in [`DeviceInfo::ports`].
pub const MAX_PORTS: usize = 4;

/// Entries in [`Version::cmds`].
pub const MAX_CMDS: usize = 8;

const IOC_NRBITS: u32 = 8;
const IOC_TYPEBITS: u32 = 8;
const IOC_SIZEBITS: u32 = 14;
const IOC_NRSHIFT: u32 = 0;
const IOC_TYPESHIFT: u32 = IOC_NRSHIFT + IOC_NRBITS;
const IOC_SIZESHIFT: u32 = IOC_TYPESHIFT + IOC_TYPEBITS;
const IOC_DIRSHIFT: u32 = IOC_SIZESHIFT + IOC_SIZEBITS;

/// `_IOC_WRITE`: userspace writes, the kernel reads.
pub const IOC_WRITE: u32 = 1;
/// `_IOC_READ`: the kernel writes, userspace reads.
pub const IOC_READ: u32 = 2;

/// `_IOC(dir, type, nr, size)` from `include/uapi/asm-generic/ioctl.h`.
pub const fn ioc(dir: u32, ty: u32, nr: u32, size: usize) -> u32 {
    (dir << IOC_DIRSHIFT)
        | (ty << IOC_TYPESHIFT)
        | (nr << IOC_NRSHIFT)
        | ((size as u32) << IOC_SIZESHIFT)
}

/// `_IOC_TYPE(cmd)`.
pub const fn ioc_type(cmd: u32) -> u32 {
    (cmd >> IOC_TYPESHIFT) & ((1 << IOC_TYPEBITS) - 1)
}

/// `_IOC_NR(cmd)`.
pub const fn ioc_nr(cmd: u32) -> u32 {
    (cmd >> IOC_NRSHIFT) & ((1 << IOC_NRBITS) - 1)
}

/// Output of [`IOCTL_VERSION`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Version {
    /// [`ABI_VERSION`] of the running module.
    pub abi_version: u32,
    /// Number of valid entries in `cmds`.
    pub n_cmds: u32,
    /// The full command numbers the module accepts, as it was compiled.
    ///
    /// A command number encodes its argument size, so comparing these with
    /// the caller's own numbers checks both sides agree on every layout.
    pub cmds: [u32; MAX_CMDS],
}

/// One port of an RDMA device, in [`DeviceInfo::ports`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortInfo {
    /// Port number (starts at 1 for a channel adapter).
    pub port_num: u32,
    /// `enum ib_port_state` when the device was added (4 is ACTIVE).
    pub state: u32,
    /// `enum ib_mtu` (1 = 256 bytes ... 5 = 4096 bytes).
    pub active_mtu: u32,
    /// `IB_LINK_LAYER_*`: 1 InfiniBand, 2 Ethernet (RoCE, iWARP).
    pub link_layer: u32,
}

/// One RDMA device as the module's `ib_client` saw it when it was added.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// NUL-terminated device name, e.g. `rxe0`.
    pub name: [u8; DEVICE_NAME_LEN],
    /// Node GUID, host byte order (the big-endian wire value, converted).
    pub node_guid: u64,
    /// `ib_device_attr::max_mr_size`.
    pub max_mr_size: u64,
    /// `ib_device_attr::max_qp_rd_atom`: the most READ/atomic requests one QP
    /// serves as a responder.
    pub max_qp_rd_atom: u32,
    /// `ib_device_attr::max_qp_init_rd_atom`: the most READ/atomic requests
    /// one QP may have outstanding as initiator.
    pub max_qp_init_rd_atom: u32,
    /// `enum ib_atomic_cap`: 0 none, 1 HCA, 2 global.
    pub atomic_cap: u32,
    /// Number of ports the device has; at most [`MAX_PORTS`] are in `ports`.
    pub num_ports: u32,
    /// The first `min(num_ports, MAX_PORTS)` ports.
    pub ports: [PortInfo; MAX_PORTS],
}

impl Default for DeviceInfo {
    fn default() -> Self {
        Self {
            name: [0; DEVICE_NAME_LEN],
            node_guid: 0,
            max_mr_size: 0,
            max_qp_rd_atom: 0,
            max_qp_init_rd_atom: 0,
            atomic_cap: 0,
            num_ports: 0,
            ports: [PortInfo::default(); MAX_PORTS],
        }
    }
}

/// Argument of [`IOCTL_LIST_DEVICES`].
///
/// The usual two-call pattern: pass `capacity = 0` to learn `count`, then
/// pass an array of `capacity` entries at `devices`. The kernel writes
/// `min(capacity, count)` entries and always sets `count` to the total.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceList {
    /// User pointer to an array of `capacity` [`DeviceInfo`].
    pub devices: u64,
    /// Entries the array at `devices` holds; at most [`MAX_LIST_CAPACITY`].
    pub capacity: u32,
    /// Output: the number of devices the module knows.
    pub count: u32,
    /// Must be zero.
    pub reserved: u64,
}

/// Largest [`DeviceList::capacity`] accepted (`EINVAL` above it).
pub const MAX_LIST_CAPACITY: u32 = 256;

/// `_IOR(0xb9, 0x00, struct Version)`: the module's ABI version and commands.
pub const IOCTL_VERSION: u32 = ioc(IOC_READ, IOC_MAGIC, 0x00, core::mem::size_of::<Version>());

/// `_IOWR(0xb9, 0x01, struct DeviceList)`: list the RDMA devices.
pub const IOCTL_LIST_DEVICES: u32 = ioc(
    IOC_READ | IOC_WRITE,
    IOC_MAGIC,
    0x01,
    core::mem::size_of::<DeviceList>(),
);

/// Every command of this ABI version, in number order.
pub const ALL_CMDS: &[u32] = &[IOCTL_VERSION, IOCTL_LIST_DEVICES];

// Sizes are part of the ABI: a change here is an ABI change.
const _: () = assert!(core::mem::size_of::<Version>() == 40);
const _: () = assert!(core::mem::size_of::<PortInfo>() == 16);
const _: () = assert!(core::mem::size_of::<DeviceInfo>() == 160);
const _: () = assert!(core::mem::size_of::<DeviceList>() == 24);
const _: () = assert!(ALL_CMDS.len() <= MAX_CMDS);
