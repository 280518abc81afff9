//! What the client section measures of one client: calls per second, sequential and in
//! flight, and CPU time per call; shared by the clients measured in-process (mcp-runtime, the
//! hand-written pipe client).

use std::time::Duration;

/// Sequential and in-flight calls/s, and the client's CPU time per call (µs, user + system,
/// the client process only) in each mode.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rates {
    pub seq: f64,
    pub par: f64,
    pub cpu_seq: f64,
    pub cpu_par: f64,
}

impl Rates {
    pub(crate) fn new(
        calls: usize,
        seq: Duration,
        par: Duration,
        cpu_seq: Duration,
        cpu_par: Duration,
    ) -> Rates {
        let n = calls as f64;
        Rates {
            seq: n / seq.as_secs_f64(),
            par: n / par.as_secs_f64(),
            cpu_seq: cpu_seq.as_secs_f64() * 1e6 / n,
            cpu_par: cpu_par.as_secs_f64() * 1e6 / n,
        }
    }
}

/// CPU time (user + system) of this process so far, every thread included.
pub(crate) fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the struct we pass; all-zero is a valid initial value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}
