// SPDX-License-Identifier: GPL-2.0

//! RDMA devices and `ib_client` registrations.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).
//! Locking rules: `Documentation/infiniband/core_locking.rst`.
//!
//! A consumer learns of devices through a [`Client`]: ib_core calls its
//! `add` for every registered device and its `remove` before a device
//! goes. A [`DeviceRef`] keeps a device from being freed (and its
//! unregistration from finishing) until it is dropped; `remove` is where a
//! consumer drops the references it holds on that device.

use super::bindings;
use super::owner::{End, Owner};
use core::{
    ffi::c_void,
    mem::MaybeUninit,
    ops::RangeInclusive,
    ptr::{self, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{
    error::to_result,
    ffi::c_int,
    prelude::*,
    str::CStr,
    sync::{Arc, LockClassKey, Mutex},
    types::{ARef, AlwaysRefCounted, ForeignOwnable, Opaque},
    ThisModule,
};

/// Size of a device name buffer, `IB_DEVICE_NAME_MAX`.
pub const NAME_LEN: usize = bindings::IB_DEVICE_NAME_MAX as usize;

/// An RDMA device, `struct ib_device`.
///
/// Counted with `ib_device_try_get()` and `ib_device_put()`: an
/// [`ARef<Device>`] ([`DeviceRef`]) keeps the device's memory valid, and
/// ib_core's unregistration waits until every count is dropped, so a
/// holder drops it from its `ib_client`'s `remove` (or before), or the
/// unregistration never finishes.
///
/// # Invariants
///
/// A `&Device` is only created for a device whose memory stays valid for
/// the whole lifetime of the reference and whose count stays above zero
/// meanwhile: inside the `add` and `remove` callbacks of a [`Client`],
/// where ib_core keeps it registered (its registration's own count is put
/// only after every client's `remove`), for an id rdma_cm keeps on it, or
/// borrowed from an [`ARef<Device>`]. The device may be unregistering in
/// the last two cases: the methods only read fields fixed before
/// registration, or call ib_core functions that check for themselves, and
/// [`Device::name`] reads with volatile loads.
#[repr(transparent)]
pub struct Device(Opaque<bindings::ib_device>);

/// A counted reference to an RDMA device.
pub type DeviceRef = ARef<Device>;

// SAFETY: an `ib_device` may be used and released from any thread.
unsafe impl Send for Device {}
// SAFETY: `&Device` allows only reads of fields fixed before registration,
// volatile reads of the name, and ib_core functions that take their own
// locks, so they may run on several threads at once.
unsafe impl Sync for Device {}

// SAFETY: `ib_device_try_get()` and `ib_device_put()` count the device, and
// ib_core's unregistration waits for the count to reach zero before the
// device is freed.
unsafe impl AlwaysRefCounted for Device {
    fn inc_ref(&self) {
        // SAFETY: the device is valid and its count above zero (type
        // invariant), so `ib_device_try_get()` cannot fail.
        let got = unsafe { bindings::ib_device_try_get(self.as_raw()) };
        debug_assert!(got);
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: the caller owns a count (`dec_ref`'s contract).
        unsafe { bindings::ib_device_put(obj.cast().as_ptr()) };
    }
}

/// Device-wide limits, from `ib_device::attrs`.
#[derive(Clone, Copy, Debug)]
pub struct DeviceAttrs {
    /// Largest memory registration, in bytes.
    pub max_mr_size: u64,
    /// READ/atomic requests one QP serves as responder (IRD ceiling).
    pub max_qp_rd_atom: u32,
    /// READ/atomic requests one QP may have outstanding (ORD ceiling).
    pub max_qp_init_rd_atom: u32,
    /// `enum ib_atomic_cap`.
    pub atomic_cap: u32,
    /// Scatter/gather entries one RDMA READ may land in.
    pub max_sge_rd: u32,
    /// Pages one fast registration maps (`max_fast_reg_page_list_len`):
    /// 256 on siw, 512 on rxe.
    pub max_fast_reg_page_list_len: u32,
    /// The page sizes a region may use, one bit each (`page_size_cap`).
    pub page_size_cap: u64,
    /// The largest streaming DMA mapping (`dma_max_mapping_size()`): 256
    /// KiB under swiotlb; unlimited on a device with virtual DMA.
    pub max_mapping: usize,
}

impl DeviceAttrs {
    /// Whether the device runs atomics at all (`atomic_cap` is not
    /// `IB_ATOMIC_NONE`). siw, for one, does not.
    pub fn has_atomics(&self) -> bool {
        self.atomic_cap != bindings::ib_atomic_cap_IB_ATOMIC_NONE
    }
}

/// State of one port, from `ib_query_port()`.
#[derive(Clone, Copy, Debug)]
pub struct PortAttrs {
    /// `enum ib_port_state`.
    pub state: u32,
    /// `enum ib_mtu`.
    pub active_mtu: u32,
    /// `enum rdma_link_layer`.
    pub link_layer: u32,
}

impl Device {
    /// Borrows a device from a pointer ib_core handed to a callback.
    ///
    /// # Safety
    ///
    /// `ptr` must point to a registered `ib_device` that stays registered for
    /// the lifetime `'a`.
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: `Device` is a transparent wrapper of `ib_device`, and the
        // caller guarantees the pointee is valid for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The raw pointer, for calls this module does not wrap.
    pub fn as_raw(&self) -> *mut bindings::ib_device {
        self.0.get()
    }

    /// A counted reference, or `None` once the device's unregistration
    /// has dropped its last count (`ib_device_try_get()`): for a device
    /// reached through a pointer that may outlive its registration.
    pub fn try_get(&self) -> Option<ARef<Device>> {
        // SAFETY: the device's memory is valid (type invariant).
        if unsafe { bindings::ib_device_try_get(self.as_raw()) } {
            // SAFETY: the count taken just above is the new `ARef`'s.
            Some(unsafe { ARef::from_raw(NonNull::from(self)) })
        } else {
            None
        }
    }

    /// ib_core's index of this device, unique among registered devices.
    pub fn index(&self) -> u32 {
        // SAFETY: by the type invariant the device is valid; `index` is set
        // before registration and never changes afterwards.
        unsafe { (*self.as_raw()).index }
    }

    /// A copy of the device name, e.g. `rxe0`, NUL-terminated.
    ///
    /// Consistent inside a [`Client`]'s `add`, where ib_core holds
    /// `devices_rwsem` and so keeps `ib_device_rename()` out. Elsewhere
    /// (`remove` included) a rename may run meanwhile, and the copy may
    /// then mix the old and the new name: a consumer that shows a name
    /// later keeps the copy it took in `add`.
    pub fn name(&self) -> [u8; NAME_LEN] {
        let mut out = [0u8; NAME_LEN];
        // SAFETY: the device is valid (type invariant). `name` is a fixed
        // array inside it; only the address is taken here.
        let src = unsafe { core::ptr::addr_of!((*self.as_raw()).name) }.cast::<u8>();
        for (i, o) in out.iter_mut().enumerate() {
            // SAFETY: `i` is within the array. Read byte by byte with
            // volatile loads (the kernel's `READ_ONCE()`): a rename may
            // write the array at the same time, and then some bytes are the
            // new name's, but no read is torn or elided.
            *o = unsafe { src.add(i).read_volatile() };
        }
        out[NAME_LEN - 1] = 0;
        out
    }

    /// The node GUID in host byte order.
    pub fn node_guid(&self) -> u64 {
        // SAFETY: the device is valid (type invariant); `node_guid` is set by
        // the driver before registration.
        u64::from_be(unsafe { (*self.as_raw()).node_guid })
    }

    /// The device's limits.
    pub fn attrs(&self) -> DeviceAttrs {
        // SAFETY: the device is valid (type invariant); `attrs` is filled by
        // the driver before registration and read-only afterwards.
        let a = unsafe { &(*self.as_raw()).attrs };
        DeviceAttrs {
            max_mr_size: a.max_mr_size,
            max_qp_rd_atom: a.max_qp_rd_atom.max(0) as u32,
            max_qp_init_rd_atom: a.max_qp_init_rd_atom.max(0) as u32,
            atomic_cap: a.atomic_cap,
            max_sge_rd: a.max_sge_rd.max(0) as u32,
            max_fast_reg_page_list_len: a.max_fast_reg_page_list_len,
            page_size_cap: a.page_size_cap,
            max_mapping: self.dma_max_mapping_size(),
        }
    }

    /// The largest single DMA mapping the device can take (under swiotlb,
    /// a bounce slot's size); `usize::MAX` for a device with virtual DMA
    /// (rxe, siw), which maps nothing.
    fn dma_max_mapping_size(&self) -> usize {
        let dev = self.as_raw();
        // SAFETY: the device is valid (type invariant).
        if unsafe { bindings::ib_uses_virt_dma(dev) } {
            return usize::MAX;
        }
        // SAFETY: the device is valid, and a device without virtual DMA
        // has a `dma_device` set at registration. Read here as the
        // `ib_dma_*` inlines read it: ib_verbs.h has no accessor for it.
        unsafe { bindings::dma_max_mapping_size((*dev).dma_device) }
    }

    /// The valid port numbers, `rdma_start_port()..=rdma_end_port()`.
    pub fn ports(&self) -> RangeInclusive<u32> {
        // SAFETY: the device is valid (type invariant).
        let (start, end) = unsafe {
            (
                bindings::rdma_start_port(self.as_raw()),
                bindings::rdma_end_port(self.as_raw()),
            )
        };
        start..=end
    }

    /// Whether the device speaks iWARP (on its first port; every port of a
    /// device speaks the same transport). An iWARP READ lands through the
    /// sink's remote key, so its sink must be a region registered with
    /// remote write access (ib_core's `rdma_rw_io_needs_mr()`), and iWARP
    /// can invalidate that key with the READ itself (`rdma_cap_read_inv()`).
    pub fn is_iwarp(&self) -> bool {
        let port = *self.ports().start();
        // SAFETY: the device is valid (type invariant) and `port` is one of
        // its ports.
        unsafe { bindings::rdma_protocol_iwarp(self.as_raw(), port) }
    }

    /// Queries one port.
    pub fn query_port(&self, port: u32) -> Result<PortAttrs> {
        if !self.ports().contains(&port) {
            return Err(EINVAL);
        }
        let mut attr = MaybeUninit::<bindings::ib_port_attr>::zeroed();
        // SAFETY: the device is valid (type invariant), `port` is in range
        // and `attr` is writable memory of the right type.
        to_result(unsafe { bindings::ib_query_port(self.as_raw(), port, attr.as_mut_ptr()) })?;
        // SAFETY: zero is a valid `ib_port_attr` (integers and enums with a
        // zero value) and `ib_query_port()` filled it in.
        let attr = unsafe { attr.assume_init() };
        // SAFETY: as above; `port` is a valid port of the device.
        let link_layer = unsafe { bindings::rdma_port_get_link_layer(self.as_raw(), port) };
        Ok(PortAttrs {
            state: attr.state,
            active_mtu: attr.active_mtu,
            link_layer: link_layer as u32,
        })
    }
}

/// The callbacks of an `ib_client`.
///
/// ib_core calls [`Client::add`] for every RDMA device that is registered
/// (including those present when the client registers), and
/// [`Client::remove`] when the device goes away or the client unregisters.
/// Both run in process context and may sleep; ib_core runs them for one
/// device at a time. `remove` must have stopped every use of the device
/// before it returns.
///
/// What `add` returns ([`Client::DeviceData`]) is kept by ib_core for the
/// device (`ib_set_client_data()`) and handed back to `remove`: the state a
/// client keeps per device needs no lookup of its own.
///
/// `ib_client::add` is not given its client, so the trampolines find the
/// registration through a [`ClientSlot`] of the client type:
/// [`rdma_client_slot!`](crate::rdma_client_slot) declares it.
pub trait Client: Send + Sync + 'static {
    /// What the client keeps for each device it was added to.
    type DeviceData: ForeignOwnable + Send + Sync;

    /// A device appeared. An error makes ib_core skip this client for the
    /// device: no `remove` follows.
    fn add(&self, dev: &Device) -> Result<Self::DeviceData>;

    /// A device for which `add` succeeded is going away; `data` is what
    /// `add` returned for it.
    fn remove(&self, dev: &Device, data: Self::DeviceData);
}

/// A [`Client`] type's own [`ClientSlot`], where its trampolines find its
/// registration. Implemented by [`rdma_client_slot!`](crate::rdma_client_slot).
///
/// # Safety
///
/// [`ClientSlotOf::slot`] returns the same slot on every call, and no other
/// type's `slot` returns it: the trampolines of `Self` read that slot as
/// the registration of `Self` and of no other type.
pub unsafe trait ClientSlotOf: Client {
    /// The slot of this client type.
    fn slot() -> &'static ClientSlot;
}

/// Implements [`ClientSlotOf`] for a [`Client`] type, with a slot of its
/// own: a `static` that only this implementation names.
///
/// # Examples
///
/// ```
/// use kernel::prelude::*;
/// use kernel::rdma::device::{Client, Device};
///
/// struct Watcher;
///
/// impl Client for Watcher {
///     type DeviceData = ();
///
///     fn add(&self, dev: &Device) -> Result {
///         pr_info!("device {} added\n", dev.index());
///         Ok(())
///     }
///
///     fn remove(&self, _dev: &Device, _data: ()) {}
/// }
///
/// kernel::rdma_client_slot!(Watcher);
/// ```
#[macro_export]
macro_rules! rdma_client_slot {
    ($client:ty) => {
        // SAFETY: `SLOT` is declared inside this function, which is the
        // one `slot` of `$client`: no other type can name it.
        unsafe impl $crate::rdma::device::ClientSlotOf for $client {
            fn slot() -> &'static $crate::rdma::device::ClientSlot {
                static SLOT: $crate::rdma::device::ClientSlot =
                    $crate::rdma::device::ClientSlot::new();
                &SLOT
            }
        }
    };
}

/// Where the callbacks of one [`Client`] type find its registration.
///
/// # Invariants
///
/// Null, or the `ClientInner<T>` of the registered `ClientRegistration<T>`
/// of the one client type `T` whose [`ClientSlotOf::slot`] this is.
pub struct ClientSlot(AtomicPtr<c_void>);

impl ClientSlot {
    /// An empty slot, for [`rdma_client_slot!`](crate::rdma_client_slot).
    #[doc(hidden)]
    pub const fn new() -> Self {
        Self(AtomicPtr::new(ptr::null_mut()))
    }
}

/// What a [`ClientRegistration`] shares with its module's [`Owner`]: the C
/// `ib_client` and the context its trampolines hand to `T`.
///
/// # Invariants
///
/// While `registered` holds `true`, `client` is on ib_core's client list
/// with its `add` and `remove` set to the trampolines of `T`, and
/// `T::slot()` points at this object, which is pinned.
#[pin_data]
struct ClientInner<T: ClientSlotOf> {
    #[pin]
    client: Opaque<bindings::ib_client>,
    #[pin]
    registered: Mutex<bool>,
    ctx: T,
}

// SAFETY: `T` is `Send + Sync`; the `ib_client` is only touched by ib_core
// under its own locks, and registered and unregistered (under
// `registered`) from any thread.
unsafe impl<T: ClientSlotOf> Send for ClientInner<T> {}
// SAFETY: as for `Send`: `&ClientInner` reads `ctx`, or takes the lock.
unsafe impl<T: ClientSlotOf> Sync for ClientInner<T> {}

impl<T: ClientSlotOf> End for ClientInner<T> {
    fn end(&self) {
        let mut registered = self.registered.lock();
        if *registered {
            // SAFETY: registered (type invariant). This waits for running
            // callbacks and calls `remove` for every device that was added.
            unsafe { bindings::ib_unregister_client(self.client.get()) };
            T::slot().0.store(ptr::null_mut(), Ordering::Release);
            *registered = false;
        }
    }
}

/// A registered `ib_client`; dropping it unregisters, which runs
/// [`Client::remove`] for every device first. If it is leaked instead, it
/// is unregistered when its module goes, after the module's exit function:
/// ib_core never calls into a module that is gone.
pub struct ClientRegistration<T: ClientSlotOf> {
    inner: Arc<ClientInner<T>>,
    owner: Arc<Owner>,
}

impl<T: ClientSlotOf> ClientRegistration<T> {
    /// Registers `ctx` as an `ib_client` named `name`, for `module` (the
    /// module's `THIS_MODULE`, whose code the callbacks are); `EBUSY` if a
    /// client of type `T` is registered already, `ENODEV` if `module` is
    /// going. May sleep: `add` runs for every device present before this
    /// returns.
    pub fn new(module: &'static ThisModule, name: &'static CStr, ctx: T) -> Result<Self> {
        might_sleep();
        let owner = Owner::of(module)?;
        // SAFETY: zero is a valid `ib_client` (null pointers, `None`
        // callbacks, zero counters); ib_core initialises its own fields.
        let mut client: bindings::ib_client = unsafe { core::mem::zeroed() };
        client.name = name.as_char_ptr();
        client.add = Some(add_callback::<T>);
        client.remove = Some(remove_callback::<T>);
        let inner = Arc::pin_init(
            pin_init!(ClientInner {
                client: Opaque::new(client),
                registered <- {
                    let (name, key) = registered_class();
                    Mutex::new(false, name, key)
                },
                ctx,
            }),
            GFP_KERNEL,
        )?;
        let me = ptr::from_ref::<ClientInner<T>>(&inner)
            .cast_mut()
            .cast::<c_void>();
        T::slot()
            .0
            .compare_exchange(ptr::null_mut(), me, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|_| EBUSY)?;
        let ended: Arc<dyn End> = inner.clone();
        if let Err(e) = owner.keep(ended) {
            T::slot().0.store(ptr::null_mut(), Ordering::Release);
            return Err(e);
        }
        let mut registered = inner.registered.lock();
        // SAFETY: the client is initialised and pinned in an `Arc` that
        // outlives the registration (the owner keeps one until it ends
        // it), and the trampolines find it through `T::slot()`, set above.
        let ret = unsafe { bindings::ib_register_client(inner.client.get()) };
        if let Err(e) = to_result(ret) {
            drop(registered);
            owner.forget(&*inner);
            T::slot().0.store(ptr::null_mut(), Ordering::Release);
            return Err(e);
        }
        // INVARIANT: registered above, `T::slot()` points at `inner`.
        *registered = true;
        drop(registered);
        Ok(Self { inner, owner })
    }
}

/// The lock class of every `ClientInner::registered`, and its name: made
/// once, here, outside the generic code, where each crate that instantiates
/// it would bring its own copy of the name, which lockdep would then find
/// under the same key (and, once that crate's module is gone, freed).
#[inline(never)]
fn registered_class() -> (&'static CStr, &'static LockClassKey) {
    (
        kernel::c_str!("rdma_client_registered"),
        kernel::static_lock_class!(),
    )
}

impl<T: ClientSlotOf> Drop for ClientRegistration<T> {
    fn drop(&mut self) {
        might_sleep();
        self.inner.end();
        self.owner.forget(&*self.inner);
    }
}

/// Returns the registration of the registered client of type `T`.
///
/// # Safety
///
/// Must only be called from an ib_core callback of the `ClientRegistration<T>`
/// currently registered, so `T::slot()` points at its live `ClientInner<T>`
/// (`T::slot()` is the slot of `T` alone: `ClientSlotOf`'s safety).
unsafe fn registered<'a, T: ClientSlotOf>() -> &'a ClientInner<T> {
    let inner = T::slot().0.load(Ordering::Acquire).cast::<ClientInner<T>>();
    // SAFETY: by the caller's guarantee `inner` is the live registration of
    // type `T`; it is freed only after `ib_unregister_client()` returns, which
    // waits for every callback.
    unsafe { &*inner }
}

/// `ib_client::add` of a [`ClientRegistration<T>`].
///
/// # Safety
///
/// Called by ib_core only, for the registered client, with a registered
/// device.
unsafe extern "C" fn add_callback<T: ClientSlotOf>(dev: *mut bindings::ib_device) -> c_int {
    // SAFETY: called by ib_core for the registered client (only
    // `ClientRegistration<T>` installs this callback).
    let inner = unsafe { registered::<T>() };
    // SAFETY: ib_core keeps `dev` registered for the duration of `add`, and
    // holds `devices_rwsem`, which keeps a rename out.
    let device = unsafe { Device::from_raw(dev) };
    match inner.ctx.add(device) {
        Ok(data) => {
            // SAFETY: `dev` is valid and `inner.client` is the registered
            // client whose `add` this is: ib_core reserved its slot for the
            // data before calling `add`, so the store allocates nothing.
            // `remove` gets the pointer back, once.
            unsafe {
                bindings::ib_set_client_data(
                    dev,
                    inner.client.get(),
                    data.into_foreign().cast_mut(),
                )
            };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// `ib_client::remove` of a [`ClientRegistration<T>`].
///
/// # Safety
///
/// Called by ib_core only, for the registered client, with a device for which
/// `add` succeeded, and the data `add_callback` stored for it.
unsafe extern "C" fn remove_callback<T: ClientSlotOf>(
    dev: *mut bindings::ib_device,
    data: *mut c_void,
) {
    // SAFETY: as in `add_callback`.
    let inner = unsafe { registered::<T>() };
    // SAFETY: ib_core keeps `dev` valid until `remove` returns.
    let device = unsafe { Device::from_raw(dev) };
    // SAFETY: `add_callback` stored `data` from `into_foreign()` of a
    // `T::DeviceData`, and ib_core hands it to `remove` once.
    let data = unsafe { T::DeviceData::from_foreign(data) };
    inner.ctx.remove(device, data);
}

/// The calling task, as an address to compare: the handler trampolines
/// record which task is inside a handler of an object.
pub(crate) fn current_task() -> *mut c_void {
    let task: &kernel::task::Task = kernel::current!();
    ptr::from_ref(task).cast_mut().cast()
}

/// Tells the kernel's debug checks (`CONFIG_DEBUG_ATOMIC_SLEEP`) that the
/// caller may sleep: a call from atomic context is reported, whether or not
/// this call happens to sleep.
pub(crate) fn might_sleep() {
    // SAFETY: no requirement; it only checks the calling context.
    unsafe { bindings::might_sleep() };
}
