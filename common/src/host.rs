//! This host's name, as Slurm uses it.

/// The host name as the kernel has it (may be fully qualified);
/// "localhost" when it cannot be read.
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the pointer and length describe `buf`, which outlives the
    // call; gethostname writes at most that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".to_owned();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..end]).into_owned();
    if name.is_empty() {
        "localhost".to_owned()
    } else {
        name
    }
}

/// The host name up to its first dot, as Slurm names and matches hosts;
/// "localhost" when it cannot be read.
pub fn short_hostname() -> String {
    let full = host_name();
    match full.split('.').next() {
        Some(short) if !short.is_empty() => short.to_owned(),
        _ => "localhost".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_name_is_the_full_one_up_to_its_first_dot() {
        let full = host_name();
        let short = short_hostname();
        assert!(!short.is_empty() && !short.contains('.'));
        assert!(full.starts_with(&short) || short == "localhost");
    }
}
