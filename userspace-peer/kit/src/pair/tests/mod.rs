// SPDX-License-Identifier: GPL-2.0

//! The two-host tests, in the order they run. Guest A (this side) connects
//! unless a test says otherwise; guest B listens. Data is checked by both
//! ends: the sender's pattern by the receiver, and echoes or the target's
//! own checks back. Each test states what it expects. One file per group.

mod clean;
mod ends;
mod lossy;
mod outage;
mod rping;

use clean::*;
use ends::*;
use lossy::*;
use outage::*;
use rping::*;

use super::{secs, show, Ctx, Job, TestFn, UP};
use anyhow::{bail, ensure, Context, Result};
use krust::abi;
use std::time::{Duration, Instant};

/// Every test, in order. `peer_powered_off` ends guest B: it runs last.
pub const ALL: &[(&str, TestFn)] = &[
    ("both_guests_see_rxe", both_guests_see_rxe),
    ("kernel_echo_across", kernel_echo_across),
    (
        "transport_settings_negotiated",
        transport_settings_negotiated,
    ),
    ("kernel_stream_both_ways", kernel_stream_both_ways),
    ("kernel_to_userspace_across", kernel_to_userspace_across),
    ("userspace_to_kernel_across", userspace_to_kernel_across),
    ("rdma_rw_both_ways", rdma_rw_both_ways),
    ("atomics_across", atomics_across),
    ("rping_across", rping_across),
    ("lossy_link_delivers", lossy_link_delivers),
    ("lossy_ack_timeout_table", lossy_ack_timeout_table),
    ("outage_within_retry_budget", outage_within_retry_budget),
    ("outage_beyond_retry_budget", outage_beyond_retry_budget),
    (
        "read_outlasts_a_fixed_timeout",
        read_outlasts_a_fixed_timeout,
    ),
    ("silent_peer_waits_end", silent_peer_waits_end),
    ("lost_dreq_is_resent", lost_dreq_is_resent),
    ("peer_powered_off", peer_powered_off),
];

/// The message sizes of the echo and stream tests: empty, one byte, just
/// past a page, past 64 KiB, past 1 MiB, and up to the 2 MiB maximum.
const SIZES: &str = "0,1,4097,65537,1048577,2097151,2097152";
const N_SIZES: usize = 7;

/// Generous bounds for a job on a clean link under TCG: a stuck job fails
/// the test instead of the suite.
const JOB: Duration = Duration::from_secs(180);
/// Bound for a job under loss.
const LOSSY_JOB: Duration = Duration::from_secs(400);
