//! slurm-common: the vocabulary every daemon and command shares.
//!
//! Everything here is plain data and pure parsing: `parse(&str)` first, file
//! reading at the edge (`load(path)`). No async runtime, no RPC, no database.

pub mod auth;
pub mod conf;
pub mod counts;
pub mod host;
pub mod hostlist;
pub mod ids;
pub mod reason;
pub mod rlimit;
pub mod signal;
pub mod size;
pub mod state;
pub mod tasklist;
pub mod time;
pub mod tree;
pub mod users;

/// The operating system's text for `e`, as C's `%m` prints it: without the
/// ` (os error N)` Rust adds.
pub fn os_error_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match (e.raw_os_error(), text.rfind(" (os error ")) {
        (Some(_), Some(at)) => text[..at].to_owned(),
        _ => text,
    }
}

#[cfg(test)]
mod os_error_tests {
    #[test]
    fn os_error_text_is_the_systems_own() {
        let e = std::io::Error::from_raw_os_error(libc::EACCES);
        assert_eq!(super::os_error_text(&e), "Permission denied");
        let other = std::io::Error::other("no number (os error 5)");
        assert_eq!(super::os_error_text(&other), "no number (os error 5)");
    }
}
