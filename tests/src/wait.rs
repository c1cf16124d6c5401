//! Polling with a deadline: the only way tests wait for something to happen.

use std::fmt;
use std::time::{Duration, Instant};

/// What was being waited for did not happen before the deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitError {
    pub what: String,
    pub waited: Duration,
}

impl fmt::Display for WaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "timed out after {:?} waiting for {}",
            self.waited, self.what
        )
    }
}

impl std::error::Error for WaitError {}

/// Calls `probe` until it returns `Some`, at most until `timeout` has passed.
/// The pause between calls starts at 1 ms and doubles up to 50 ms, so fast
/// conditions are seen fast and slow ones do not spin a core.
pub fn wait_until<T>(
    what: &str,
    timeout: Duration,
    mut probe: impl FnMut() -> Option<T>,
) -> Result<T, WaitError> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(v) = probe() {
            return Ok(v);
        }
        let waited = start.elapsed();
        if waited >= timeout {
            return Err(WaitError {
                what: what.to_string(),
                waited,
            });
        }
        std::thread::sleep(pause.min(timeout - waited));
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_the_value_once_the_probe_succeeds() {
        let mut calls = 0;
        let v = wait_until("third call", Duration::from_secs(5), || {
            calls += 1;
            (calls == 3).then_some(calls)
        });
        assert_eq!(v, Ok(3));
    }

    #[test]
    fn names_what_it_waited_for_on_timeout() {
        let err = wait_until::<()>("nothing", Duration::from_millis(5), || None)
            .expect_err("must time out");
        assert_eq!(err.what, "nothing");
        assert!(err.waited >= Duration::from_millis(5));
        assert!(err.to_string().contains("waiting for nothing"));
    }
}
