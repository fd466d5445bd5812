#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Installing the module, without a guest: builds rdma_krust.ko against a
# cached kernel, runs `make modules_install` into a scratch INSTALL_MOD_PATH
# and checks where the module landed and what modinfo says of it; then the
# Makefile's refusals of kernels it cannot build against (one line each,
# exit 2); then the build for a kernel without the kernel::rdma series
# (KRUST_OWN_RDMA=1), installed the same way; then a DKMS build of the tree
# (dkms.conf) in scratch DKMS trees.
# Nothing is installed on this machine and no kernel is built.
#
#   scripts/install-test.sh            against the cached main kernel
#   KDIR=/path scripts/install-test.sh against another built kernel tree
#
# The last line is "install-test: N passed, N failed"; exits 1 on a failure.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$HOME/.cargo/bin:$PATH"
cd "$ROOT"
# The defaults are what is tested.
unset INSTALL_MOD_DIR INSTALL_MOD_PATH

passed=0
failed=0
check() { # NAME DETAIL-ON-FAILURE CONDITION...
	local name=$1 detail=$2
	shift 2
	if "$@"; then
		passed=$((passed + 1))
		echo "install-test: PASS $name"
	else
		failed=$((failed + 1))
		echo "install-test: FAIL $name: $detail"
	fi
}
finish() {
	echo "install-test: $passed passed, $failed failed"
	if [ "$failed" = 0 ]; then exit 0; fi
	exit 1
}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

kdir=${KDIR:-$(scripts/build-kernel.sh --print-kdir)}
if [[ ! -f $kdir/include/config/kernel.release ]]; then
	check kernel_is_built "no built kernel at $kdir (scripts/build-kernel.sh builds it)" false
	finish
fi
release=$(<"$kdir/include/config/kernel.release")

# --- the module, built and installed ---
if make -s KDIR="$kdir" modules >"$scratch/build.log" 2>&1; then
	check module_builds "" true
else
	cat "$scratch/build.log"
	check module_builds "make KDIR=$kdir modules failed" false
	finish
fi

modpath=$scratch/root
if make -s KDIR="$kdir" modules_install INSTALL_MOD_PATH="$modpath" >"$scratch/install.log" 2>&1; then
	check modules_install_succeeds "" true
else
	cat "$scratch/install.log"
	check modules_install_succeeds "make modules_install failed" false
	finish
fi

installed=$modpath/lib/modules/$release/extra/rdma_krust.ko
check lands_in_extra "no $installed" test -f "$installed"
found=$(find "$modpath" -name 'rdma_krust.ko*' | wc -l)
check installed_once "$found copies of rdma_krust.ko* under $modpath" test "$found" = 1

name=$(modinfo -F name "$installed" 2>/dev/null || true)
check modinfo_name "name is '$name'" test "$name" = rdma_krust
vermagic=$(modinfo -F vermagic "$installed" 2>/dev/null || true)
built_vermagic=$(modinfo -F vermagic rdma_krust.ko)
check modinfo_vermagic_release "vermagic '$vermagic' does not start with '$release '" \
	test "${vermagic%% *}" = "$release"
check modinfo_vermagic_as_built "vermagic '$vermagic', built '$built_vermagic'" \
	test "$vermagic" = "$built_vermagic"
# depmod ran against the scratch root (the kernel tree has its System.map).
check depmod_lists_it "extra/rdma_krust.ko missing from modules.dep" \
	grep -q '^extra/rdma_krust\.ko:' "$modpath/lib/modules/$release/modules.dep"

# INSTALL_MOD_DIR still chooses the directory.
other=$scratch/other
make -s KDIR="$kdir" modules_install INSTALL_MOD_PATH="$other" INSTALL_MOD_DIR=updates \
	>"$scratch/install2.log" 2>&1 || cat "$scratch/install2.log"
check install_mod_dir_overrides "no $other/lib/modules/$release/updates/rdma_krust.ko" \
	test -f "$other/lib/modules/$release/updates/rdma_krust.ko"

# --- The build for a kernel without the kernel::rdma series: KRUST_OWN_RDMA=1
# makes the module build kernel/rust/kernel/rdma/ and the RDMA helpers
# itself, as it does on a distribution's kernel; it installs the same way,
# and carries what the kernel would (the helpers, kernel::rdma's code) ---
own=$scratch/own
if make -s KDIR="$kdir" KRUST_OWN_RDMA=1 modules >"$scratch/own.log" 2>&1 &&
	make -s KDIR="$kdir" KRUST_OWN_RDMA=1 modules_install INSTALL_MOD_PATH="$own" \
		>>"$scratch/own.log" 2>&1; then
	check own_rdma_installs "no $own/lib/modules/$release/extra/rdma_krust.ko" \
		test -f "$own/lib/modules/$release/extra/rdma_krust.ko"
	helpers=$(nm rdma_krust.ko | grep -c ' T rust_helper_' || true)
	check own_rdma_carries_helpers "$helpers rust_helper_* defined" test "$helpers" -gt 0
else
	cat "$scratch/own.log"
	check own_rdma_installs "make KRUST_OWN_RDMA=1 modules or modules_install failed" false
fi
# The default build again, for what follows.
make -s KDIR="$kdir" modules >"$scratch/build.log" 2>&1 || cat "$scratch/build.log"

# --- DKMS: this tree as a DKMS source (dkms.conf), in scratch DKMS and
# source trees, built against the kernel; and skipped, by dkms.conf's
# BUILD_EXCLUSIVE_CONFIG (dkms's status 77), for a kernel without Rust ---
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' dkms.conf)
fake_norust=$scratch/dkms-norust
mkdir -p "$fake_norust"
grep -v '^CONFIG_RUST=' "$kdir/.config" >"$fake_norust/.config"
dsrc=$scratch/dkms-src
dtree=$scratch/dkms-tree
mkdir -p "$dsrc/rdma-krust-$version" "$dtree"
# The module's sources only: what a package or a tarball of it would hold.
git ls-files -z 2>/dev/null | grep -zv '^userspace-peer/' | xargs -0 -r cp --parents -t "$dsrc/rdma-krust-$version" ||
	tar -C "$ROOT" --exclude=./userspace-peer --exclude=./.git -cf - . | tar -C "$dsrc/rdma-krust-$version" -xf -
dkms_() { dkms "$@" --dkmstree "$dtree" --sourcetree "$dsrc" -m rdma-krust -v "$version"; }
if ! command -v dkms >/dev/null; then
	check dkms_installed "no dkms (scripts/setup.sh installs it)" false
elif dkms_ add >"$scratch/dkms.log" 2>&1 &&
	dkms_ build -k "$release" --kernelsourcedir "$kdir" >>"$scratch/dkms.log" 2>&1; then
	built=$dtree/rdma-krust/$version/$release/$(uname -m)/module/rdma_krust.ko
	check dkms_builds "no $built" test -f "$built"
	dvermagic=$(modinfo -F vermagic "$built" 2>/dev/null || true)
	check dkms_vermagic "vermagic '$dvermagic', built by make '$built_vermagic'" \
		test "$dvermagic" = "$built_vermagic"
	rc=0
	dkms_ build -k 6.12.0-norust --kernelsourcedir "$fake_norust" >"$scratch/dkms2.log" 2>&1 || rc=$?
	check dkms_skips_kernel_without_rust "dkms build exited $rc, not 77: $(cat "$scratch/dkms2.log")" \
		test "$rc" = 77
else
	cat "$scratch/dkms.log"
	check dkms_builds "dkms add/build failed" false
fi

# --- kernels the module cannot be built against: one line, exit 2 ---
# refuses NAME KDIR PATTERN: `make KDIR=... modules` exits 2 before Kbuild
# runs, with one line of output that matches PATTERN and names the page.
refuses() {
	local name=$1 dir=$2 pattern=$3 out rc=0
	out=$(make --no-print-directory KDIR="$dir" modules 2>&1) || rc=$?
	if [[ $rc = 2 && $(printf '%s\n' "$out" | wc -l) = 1 && $out =~ $pattern &&
		$out == *Documentation/real-hosts.rst* ]]; then
		check "$name" "" true
	else
		check "$name" "exit $rc, output: $out" false
	fi
}
fake=$scratch/fake
mkdir -p "$fake/unconfigured" "$fake/norust" "$fake/gcc" "$fake/unbuilt"
grep -v '^CONFIG_RUST=' "$kdir/.config" >"$fake/norust/.config"
sed -e 's/^CONFIG_CC_IS_CLANG=y$/CONFIG_CC_IS_GCC=y/' \
	-e 's/^CONFIG_CC_VERSION_TEXT=.*/CONFIG_CC_VERSION_TEXT="gcc-12 (Debian 12.2.0-14) 12.2.0"/' \
	"$kdir/.config" >"$fake/gcc/.config"
cp "$kdir/.config" "$fake/unbuilt/.config"
refuses refuses_missing_kdir "$fake/nonexistent" 'no such directory'
refuses refuses_unconfigured_kdir "$fake/unconfigured" 'no \.config'
refuses refuses_kernel_without_rust "$fake/norust" 'CONFIG_RUST is not set'
refuses refuses_gcc_built_kernel "$fake/gcc" 'not built with clang.*gcc-12'
refuses refuses_unbuilt_kernel "$fake/unbuilt" 'libkernel\.rmeta'

finish
