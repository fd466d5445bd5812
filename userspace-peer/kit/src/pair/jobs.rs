// SPDX-License-Identifier: GPL-2.0

//! Jobs on either guest of a pair: commands run here, or on the other guest
//! through its agent (`rdma-krust-kit agent`), with one interface.
//!
//! The agent and the driver share a directory (a 9p share of the host that
//! both guests mount, uncached), so the control path does not cross the
//! link under test: a lossy or cut link slows or breaks only the data
//! path. Files, each written whole (to a temporary name, then renamed):
//!
//! - `req.N`: the driver asks for job N, a `sh -c` command line;
//! - `out.N`: the job's stdout and stderr, as it runs;
//! - `rc.N`: its exit status once it ended, the shell's, written when no
//!   process of its group is left (128 + signal if killed);
//! - `kill.N`: the driver asks the agent to kill job N's process group;
//! - `ready`: the agent is up; `stop`: the agent should end.

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How often the agent and the driver look at the shared directory.
const POLL: Duration = Duration::from_millis(50);

/// Writes `text` to `dir/name` whole: readers see all of it or no file.
fn put(dir: &Path, name: &str, text: &str) -> Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    fs::write(&tmp, text).with_context(|| format!("write {}", tmp.display()))?;
    fs::rename(&tmp, dir.join(name)).with_context(|| format!("rename to {name}"))?;
    Ok(())
}

/// Starts `sh -c cmd` in its own process group, output to `out`.
fn start(cmd: &str, out: &Path) -> Result<Child> {
    let f = fs::File::create(out).with_context(|| format!("create {}", out.display()))?;
    let f2 = f.try_clone()?;
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .stdout(f)
        .stderr(f2)
        .process_group(0)
        .spawn()
        .with_context(|| format!("spawn {cmd}"))
}

/// Whether the process group `pgid` has no process left. A job is its
/// whole group: `sh -c` keeps running what it started as children, and a
/// signal to the group can end the shell before them (dash dies of
/// SIGUSR1 at once while the tool it runs still reports its `EINTR`).
fn group_gone(pgid: u32) -> bool {
    // SAFETY: signal 0 only checks that the group exists.
    let r = unsafe { libc::kill(-(pgid as i32), 0) };
    r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// The exit status of `c`'s shell once its whole process group is gone
/// (whatever the shell's children print is in the output by then).
fn group_ended(c: &mut Child) -> Result<Option<std::process::ExitStatus>> {
    let pgid = c.id();
    Ok(c.try_wait()?.filter(|_| group_gone(pgid)))
}

/// Exit status as a number: the code, or 128 + the signal.
fn status_code(s: std::process::ExitStatus) -> i32 {
    s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
}

/// `rdma-krust-kit agent`: runs the driver's requests from `dir` until `stop`.
pub fn agent(dir: &Path) -> Result<()> {
    let mut next = 1u32;
    let mut running: BTreeMap<u32, Child> = BTreeMap::new();
    put(dir, "ready", "")?;
    loop {
        if dir.join("stop").exists() {
            for (_, mut c) in running {
                // SAFETY: plain syscall on our own child's process group.
                unsafe { libc::kill(-(c.id() as i32), libc::SIGKILL) };
                let _ = c.wait();
            }
            return Ok(());
        }
        while let Ok(cmd) = fs::read_to_string(dir.join(format!("req.{next}"))) {
            let out = dir.join(format!("out.{next}"));
            match start(&cmd, &out) {
                Ok(c) => {
                    running.insert(next, c);
                }
                Err(e) => {
                    fs::write(&out, format!("agent: {e:#}\n"))?;
                    put(dir, &format!("rc.{next}"), "127")?;
                }
            }
            next += 1;
        }
        let mut ended = Vec::new();
        for (n, c) in running.iter_mut() {
            if dir.join(format!("kill.{n}")).exists() {
                // SAFETY: as above.
                unsafe { libc::kill(-(c.id() as i32), libc::SIGKILL) };
            }
            if let Some(s) = group_ended(c)? {
                put(dir, &format!("rc.{n}"), &status_code(s).to_string())?;
                ended.push(*n);
            }
        }
        for n in ended {
            running.remove(&n);
        }
        std::thread::sleep(POLL);
    }
}

/// Where a job runs.
pub enum Host {
    /// This guest; outputs under the directory.
    Local(PathBuf),
    /// The other guest, through its agent's directory.
    Remote(PathBuf),
}

/// A started job.
pub struct Job {
    name: String,
    out: PathBuf,
    rc: PathBuf,
    kill: Kill,
}

enum Kill {
    Local(Child),
    Remote(PathBuf),
}

impl Host {
    /// The job directory.
    fn dir(&self) -> &Path {
        match self {
            Host::Local(d) | Host::Remote(d) => d,
        }
    }

    /// Waits until the agent is up (the other guest booted and set up).
    pub fn wait_ready(&self, timeout: Duration) -> Result<()> {
        let end = Instant::now() + timeout;
        while !self.dir().join("ready").exists() {
            if Instant::now() > end {
                bail!("the other guest's agent is not up after {timeout:?}");
            }
            std::thread::sleep(POLL);
        }
        Ok(())
    }

    /// Starts `cmd` (a `sh -c` line); `label` names it in errors.
    pub fn spawn(&self, seq: u32, label: &str, cmd: &str) -> Result<Job> {
        let dir = self.dir();
        let out = dir.join(format!("out.{seq}"));
        let rc = dir.join(format!("rc.{seq}"));
        let kill = match self {
            Host::Local(_) => Kill::Local(start(cmd, &out)?),
            Host::Remote(_) => {
                put(dir, &format!("req.{seq}"), cmd)?;
                Kill::Remote(dir.join(format!("kill.{seq}")))
            }
        };
        Ok(Job {
            name: label.to_string(),
            out,
            rc,
            kill,
        })
    }
}

impl Job {
    /// What the job printed so far.
    pub fn output(&self) -> String {
        fs::read_to_string(&self.out).unwrap_or_default()
    }

    /// Its exit status, if it ended.
    fn try_rc(&mut self) -> Result<Option<i32>> {
        match &mut self.kill {
            Kill::Local(c) => Ok(group_ended(c)?.map(status_code)),
            Kill::Remote(_) => Ok(fs::read_to_string(&self.rc)
                .ok()
                .and_then(|s| s.trim().parse().ok())),
        }
    }

    /// Waits until a line of the output contains `needle`.
    pub fn wait_for(&mut self, needle: &str, timeout: Duration) -> Result<()> {
        let end = Instant::now() + timeout;
        loop {
            if self.output().lines().any(|l| l.contains(needle)) {
                return Ok(());
            }
            if let Some(rc) = self.try_rc()? {
                bail!(
                    "{} ended ({rc}) before printing {needle:?}: {}",
                    self.name,
                    self.output().trim_end()
                );
            }
            if Instant::now() > end {
                bail!("{}: no {needle:?} after {timeout:?}", self.name);
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits for the job to end; returns its status and output. Killed on
    /// timeout (an error).
    pub fn wait(&mut self, timeout: Duration) -> Result<(i32, String)> {
        let end = Instant::now() + timeout;
        loop {
            if let Some(rc) = self.try_rc()? {
                return Ok((rc, self.output()));
            }
            if Instant::now() > end {
                self.kill();
                bail!(
                    "{} still running after {timeout:?}, killed: {}",
                    self.name,
                    self.output().trim_end()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits for the job and requires exit status 0; returns the output.
    pub fn success(&mut self, timeout: Duration) -> Result<String> {
        let (rc, out) = self.wait(timeout)?;
        if rc != 0 {
            bail!("{} failed ({rc}): {}", self.name, out.trim_end());
        }
        Ok(out)
    }

    /// Kills the job's process group (no wait).
    pub fn kill(&mut self) {
        match &mut self.kill {
            Kill::Local(c) => {
                // SAFETY: plain syscall on our own child's process group.
                unsafe { libc::kill(-(c.id() as i32), libc::SIGKILL) };
                let _ = c.wait();
            }
            Kill::Remote(k) => {
                let _ = fs::write(k, "");
            }
        }
    }

    /// Sends `sig` to a local job's process group.
    pub fn signal(&self, sig: i32) {
        if let Kill::Local(c) = &self.kill {
            // SAFETY: plain syscall on our own child's process group.
            unsafe { libc::kill(-(c.id() as i32), sig) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flake of `silent_peer_waits_end` in CI: SIGUSR1 to a job's group
    /// ended its shell at once, and the job counted as done before the
    /// process it ran had printed how its wait ended.
    #[test]
    fn a_signalled_job_ends_with_its_whole_group() {
        let dir = std::env::temp_dir().join(format!("krust-jobs-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let host = Host::Local(dir.clone());
        // The inner shell stands for the tool: it handles SIGUSR1, reports
        // it a little later and exits; the job's own shell dies of it.
        let mut job = host
            .spawn(
                1,
                "signalled",
                "sh -c 'trap \"sleep 0.3; echo interrupted; exit 3\" USR1; \
                 echo waiting; sleep 30 & wait'",
            )
            .unwrap();
        job.wait_for("waiting", Duration::from_secs(10)).unwrap();
        job.signal(libc::SIGUSR1);
        let (rc, out) = job.wait(Duration::from_secs(20)).unwrap();
        let _ = fs::remove_dir_all(&dir);
        assert_eq!(
            rc,
            128 + libc::SIGUSR1,
            "the job's shell dies of the signal"
        );
        assert!(out.contains("interrupted"), "output: {out:?}");
    }
}
