//! Free loopback ports for daemons under test.
//!
//! The kernel picks an unused port when binding port 0; the listener is closed
//! again and the number handed to the daemon. Another process could take the
//! port in between, so ports handed out by this process are also remembered and
//! never given twice, which removes the common race between tests of one run.

use std::collections::HashSet;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::Mutex;

use anyhow::{bail, Context, Result};

static GIVEN: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

/// A TCP port on 127.0.0.1 that was free a moment ago and that this process has
/// not handed out before.
pub fn free_loopback_port() -> Result<u16> {
    for _ in 0..64 {
        let listener =
            TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("cannot bind a loopback port")?;
        let port = listener.local_addr().context("no local address")?.port();
        drop(listener);
        let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
        if given.get_or_insert_with(HashSet::new).insert(port) {
            return Ok(port);
        }
    }
    bail!("no fresh loopback port after 64 tries")
}
