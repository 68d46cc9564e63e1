//! Small readers of process and machine state: CPU time, /proc/stat, and
//! the kernel block-device name behind a device number.

use std::path::PathBuf;

/// User and system CPU seconds of the whole process (every thread, io_uring
/// workers included, since they belong to the process's thread group).
pub fn process_cpu() -> (f64, f64) {
    // Safety: getrusage only writes into the zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // Safety: valid pointer to a rusage struct.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

/// (busy, total) jiffies of all CPUs from /proc/stat; busy excludes idle and iowait.
pub fn machine_jiffies() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 5 {
        return None;
    }
    // user nice system idle iowait irq softirq steal (guest is inside user)
    let total: u64 = v.iter().take(8).sum();
    let idle = v[3] + v[4];
    Some((total - idle, total))
}

/// Online CPU cores.
pub fn cores() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

/// `/sys/dev/block/MAJ:MIN` of a device number.
pub fn sys_dev_block(rdev: u64) -> PathBuf {
    PathBuf::from(format!(
        "/sys/dev/block/{}:{}",
        rustix::fs::major(rdev),
        rustix::fs::minor(rdev)
    ))
}

/// Now as RFC 3339 UTC with milliseconds.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_format() {
        let s = now_rfc3339();
        assert_eq!(s.len(), 24, "{s}");
        assert!(s.ends_with('Z'));
    }

    #[test]
    fn cpu_readers() {
        let (u, s) = process_cpu();
        assert!(u >= 0.0 && s >= 0.0);
        if let Some((busy, total)) = machine_jiffies() {
            assert!(busy <= total);
        }
        assert!(cores() >= 1);
    }
}
