// SPDX-License-Identifier: GPL-2.0

//! A misc character device whose file operations are Rust.
//!
//! C header: [`include/linux/miscdevice.h`](srctree/include/linux/miscdevice.h).
//!
//! 6.12's `kernel` crate has no misc device abstraction; this one follows the
//! shape of the one that later kernels gained: a `#[vtable]` trait, C
//! trampolines, and a registration that deregisters on drop. Two differences:
//! the registration owns a `Context` that `open` sees, and the file
//! operations carry the module as `owner`, so an open file pins the module
//! (rmmod is refused while a file is open).

use super::sys as bindings;
use core::{marker::PhantomPinned, pin::Pin};
use kernel::{
    error::{to_result, VTABLE_DEFAULT_ERROR},
    ffi::{c_int, c_long, c_uint, c_ulong},
    prelude::*,
    str::CStr,
    types::{ForeignOwnable, Opaque},
    ThisModule,
};

/// The file operations of a misc device.
#[vtable]
pub(crate) trait MiscDevice: Sized {
    /// Shared by all files; owned by the registration.
    type Context: Send + Sync;

    /// The per-file state, kept in `file->private_data`.
    type Ptr: ForeignOwnable + Send + Sync;

    /// A process opened the device node.
    fn open(ctx: &Self::Context) -> Result<Self::Ptr>;

    /// The last reference to the file went away.
    fn release(device: Self::Ptr) {
        drop(device);
    }

    /// `unlocked_ioctl`. Returns the syscall's value or an errno.
    fn ioctl(
        _device: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        _cmd: u32,
        _arg: usize,
    ) -> Result<isize> {
        kernel::build_error(VTABLE_DEFAULT_ERROR)
    }

    /// `compat_ioctl`, for 32-bit callers on a 64-bit kernel. Without it, a
    /// device with [`MiscDevice::ioctl`] gets `compat_ptr_ioctl()`, which
    /// converts the argument as a pointer and calls `ioctl`: right for an
    /// ABI whose structures have the same layout for 32- and 64-bit callers.
    fn compat_ioctl(
        _device: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        _cmd: u32,
        _arg: usize,
    ) -> Result<isize> {
        kernel::build_error(VTABLE_DEFAULT_ERROR)
    }
}

/// What a misc registration pins: the C `miscdevice`, the
/// `file_operations` it points at, and the context every open sees.
///
/// # Invariants
///
/// Once registered, `misc.fops` points at `fops`, whose callbacks are the
/// trampolines of `T`; `misc_open()` stores `&misc` in each file's
/// `private_data`, from which `container_of` finds this object, which does
/// not move (`_pin`) and outlives every open file (deregistration waits for
/// none, but the module holds itself while files are open: `fops.owner`).
struct MiscInner<T: MiscDevice> {
    misc: Opaque<bindings::miscdevice>,
    fops: Opaque<bindings::file_operations>,
    ctx: T::Context,
    _pin: PhantomPinned,
}

/// A registered misc device; dropping it deregisters the device.
///
/// # Invariants
///
/// `inner.misc` is registered with `misc_register()` until `drop`, and its
/// `fops` point at `inner.fops`.
pub(crate) struct MiscRegistration<T: MiscDevice> {
    inner: Pin<KBox<MiscInner<T>>>,
}

// SAFETY: the registration only hands out `&T::Context` (which is `Sync`)
// and the kernel-owned parts are only touched by the misc core under its own
// lock; dropping it from any thread is fine (`misc_deregister()` may sleep but
// has no thread affinity).
unsafe impl<T: MiscDevice> Send for MiscRegistration<T> where T::Context: Send {}
// SAFETY: a shared reference allows no access at all.
unsafe impl<T: MiscDevice> Sync for MiscRegistration<T> {}

impl<T: MiscDevice> MiscRegistration<T> {
    /// Registers `/dev/<name>` with a dynamic minor and file mode `mode`.
    pub(crate) fn new(
        name: &'static CStr,
        mode: u16,
        module: &'static ThisModule,
        ctx: T::Context,
    ) -> Result<Self> {
        let inner = KBox::pin(
            MiscInner::<T> {
                misc: Opaque::uninit(),
                fops: Opaque::uninit(),
                ctx,
                _pin: PhantomPinned,
            },
            GFP_KERNEL,
        )?;

        // The callbacks are `T`'s, chosen at compile time; the owner is the
        // one field a constant cannot know.
        let mut fops = FileOps::<T>::TABLE;
        fops.owner = module.as_ptr().cast();
        // SAFETY: `inner.fops` is valid for writes and not yet shared.
        unsafe { inner.fops.get().write(fops) };

        // SAFETY: zero is a valid `miscdevice` (null pointers, empty list).
        let mut misc: bindings::miscdevice = unsafe { core::mem::zeroed() };
        misc.minor = bindings::RKRUST_MISC_DYNAMIC_MINOR;
        misc.name = name.as_char_ptr();
        misc.fops = inner.fops.get();
        misc.mode = mode;
        // SAFETY: `inner.misc` is valid for writes and not yet shared.
        unsafe { inner.misc.get().write(misc) };

        // SAFETY: `misc` and the `fops` it points at are initialised and
        // pinned in a box that is freed only after `misc_deregister()`.
        to_result(unsafe { bindings::misc_register(inner.misc.get()) })?;
        // INVARIANT: registered just above.
        Ok(Self { inner })
    }
}

/// The `file_operations` of a [`MiscRegistration<T>`], built at compile
/// time as upstream's `miscdevice.rs` builds its `VTABLE`: the trampolines
/// of `T`, and only those `T` implements.
struct FileOps<T>(core::marker::PhantomData<T>);

impl<T: MiscDevice> FileOps<T> {
    const TABLE: bindings::file_operations = bindings::file_operations {
        open: Some(open_callback::<T>),
        release: Some(release_callback::<T>),
        unlocked_ioctl: if T::HAS_IOCTL {
            Some(ioctl_callback::<T>)
        } else {
            None
        },
        #[cfg(CONFIG_COMPAT)]
        compat_ioctl: if T::HAS_COMPAT_IOCTL {
            Some(compat_ioctl_callback::<T>)
        } else if T::HAS_IOCTL {
            // The 64-bit handler, with the argument as a pointer.
            Some(bindings::compat_ptr_ioctl)
        } else {
            None
        },
        // SAFETY: zero is a valid `file_operations` (every operation absent).
        ..unsafe { core::mem::MaybeUninit::zeroed().assume_init() }
    };
}

impl<T: MiscDevice> Drop for MiscRegistration<T> {
    fn drop(&mut self) {
        // SAFETY: registered (type invariant). After this no new `open` can
        // start; files already open hold a reference on the module, so the
        // module (and this registration) cannot be torn down under them.
        unsafe { bindings::misc_deregister(self.inner.misc.get()) };
    }
}

/// `file_operations::open` of a [`MiscRegistration<T>`].
///
/// # Safety
///
/// Called by `misc_open()` only, with `file->private_data` set to the
/// registration's `miscdevice`.
unsafe extern "C" fn open_callback<T: MiscDevice>(
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: `misc_open()` stored the `miscdevice` in `private_data` and
    // calls us with `misc_mtx` held, so the registration cannot go away.
    let misc = unsafe { (*file).private_data }.cast::<bindings::miscdevice>();
    // SAFETY: every `miscdevice` with these fops is the `misc` field of a
    // `MiscInner<T>` (see `MiscRegistration::new`).
    let inner = unsafe { &*kernel::container_of!(misc, MiscInner<T>, misc) };
    match T::open(&inner.ctx) {
        Ok(state) => {
            // SAFETY: `file` is valid; `private_data` is ours from now on.
            unsafe { (*file).private_data = state.into_foreign().cast_mut() };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// `file_operations::release` of a [`MiscRegistration<T>`].
///
/// # Safety
///
/// Called by the VFS only, once, for a file that `open_callback` opened.
unsafe extern "C" fn release_callback<T: MiscDevice>(
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: `open_callback` stored a `T::Ptr` in `private_data`; release
    // is the last call on this file, so ownership can be taken back.
    let state = unsafe { T::Ptr::from_foreign((*file).private_data.cast_const()) };
    T::release(state);
    0
}

/// `file_operations::unlocked_ioctl` of a [`MiscRegistration<T>`].
///
/// # Safety
///
/// Called by the VFS only, for a file that `open_callback` opened and that
/// is not yet released.
unsafe extern "C" fn ioctl_callback<T: MiscDevice>(
    file: *mut bindings::file,
    cmd: c_uint,
    arg: c_ulong,
) -> c_long {
    // SAFETY: `private_data` holds the `T::Ptr` of a successful open, and
    // `release` cannot run while this file operation is in progress.
    let state = unsafe { T::Ptr::borrow((*file).private_data.cast_const()) };
    match T::ioctl(state, cmd, arg) {
        Ok(ret) => ret as c_long,
        Err(e) => e.to_errno() as c_long,
    }
}

/// `file_operations::compat_ioctl` of a [`MiscRegistration<T>`].
///
/// # Safety
///
/// As [`ioctl_callback`].
unsafe extern "C" fn compat_ioctl_callback<T: MiscDevice>(
    file: *mut bindings::file,
    cmd: c_uint,
    arg: c_ulong,
) -> c_long {
    // SAFETY: as in `ioctl_callback`.
    let state = unsafe { T::Ptr::borrow((*file).private_data.cast_const()) };
    match T::compat_ioctl(state, cmd, arg) {
        Ok(ret) => ret as c_long,
        Err(e) => e.to_errno() as c_long,
    }
}
