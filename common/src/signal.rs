//! Signal names as Slurm's commands and options take them (`scancel -s`,
//! `sbatch --signal`): a number from 1 to 64, or a Linux signal name with or
//! without `SIG`, in any case. One table, so the commands and the
//! controller agree on every name.

/// Linux signal names without the `SIG` prefix, with their numbers.
const SIGNALS: &[(&str, u32)] = &[
    ("HUP", 1),
    ("INT", 2),
    ("QUIT", 3),
    ("ILL", 4),
    ("TRAP", 5),
    ("ABRT", 6),
    ("IOT", 6),
    ("BUS", 7),
    ("FPE", 8),
    ("KILL", 9),
    ("USR1", 10),
    ("SEGV", 11),
    ("USR2", 12),
    ("PIPE", 13),
    ("ALRM", 14),
    ("TERM", 15),
    ("STKFLT", 16),
    ("CHLD", 17),
    ("CONT", 18),
    ("STOP", 19),
    ("TSTP", 20),
    ("TTIN", 21),
    ("TTOU", 22),
    ("URG", 23),
    ("XCPU", 24),
    ("XFSZ", 25),
    ("VTALRM", 26),
    ("PROF", 27),
    ("WINCH", 28),
    ("IO", 29),
    ("POLL", 29),
    ("PWR", 30),
    ("SYS", 31),
];

/// A signal given by number (1-64) or by name, with or without `SIG`, in
/// any case (`USR1`, `sigusr1`, `10`); `None` for anything else.
pub fn parse_signal(s: &str) -> Option<u32> {
    let s = s.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse::<u32>().ok().filter(|n| (1..=64).contains(n));
    }
    let upper = s.to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    SIGNALS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, num)| num)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_names_in_any_case() {
        assert_eq!(parse_signal("USR1"), Some(10));
        assert_eq!(parse_signal("sigterm"), Some(15));
        assert_eq!(parse_signal("SIGKILL"), Some(9));
        assert_eq!(parse_signal(" 9 "), Some(9));
        assert_eq!(parse_signal("64"), Some(64));
    }

    #[test]
    fn everything_else_is_refused() {
        for bad in [
            "0",
            "65",
            "+10",
            "-9",
            "99999999999999999999",
            "FOO",
            "SIG",
            "",
            "ＵＳＲ1",
        ] {
            assert_eq!(parse_signal(bad), None, "{bad:?}");
        }
    }
}
