//! Memory sizes as Slurm writes them (`--mem=4G`, `RealMemory=4000`,
//! `mem=4000M`, `MaxRSS` `1240K`).
//!
//! Slurm keeps memory requests and node memory in whole megabytes (MiB) and
//! usage samples in kilobytes (KiB). Users may add a binary suffix when they
//! type a size; output shows the number either bare (`sinfo`'s `MEMORY`,
//! `scontrol show node`'s `RealMemory=`) or with the largest suffix that
//! divides it exactly (TRES strings, `squeue %m`, `sacct` `ReqMem` and
//! `MaxRSS`). Both directions live here so commands and daemons agree.

use thiserror::Error;

/// Why a memory size could not be read. Commands word it their own way
/// (`sbatch` says `invalid memory constraint`); the input is kept for that.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SizeError {
    /// Empty input, a non-digit where a number belongs or an unknown suffix.
    #[error("invalid memory specification {input:?}")]
    Invalid { input: String },
    /// The value does not fit in a 64-bit count of megabytes.
    #[error("memory specification {input:?} is too large")]
    Overflow { input: String },
}

/// The unit a count is kept in, and the suffix letter that names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SizeUnit {
    Kilo,
    Mega,
    Giga,
    Tera,
    Peta,
    Exa,
}

impl SizeUnit {
    const ALL: [SizeUnit; 6] = [
        SizeUnit::Kilo,
        SizeUnit::Mega,
        SizeUnit::Giga,
        SizeUnit::Tera,
        SizeUnit::Peta,
        SizeUnit::Exa,
    ];

    /// The suffix letter Slurm prints: `K`, `M`, `G`, `T`, `P`, `E`.
    pub fn suffix(self) -> char {
        match self {
            SizeUnit::Kilo => 'K',
            SizeUnit::Mega => 'M',
            SizeUnit::Giga => 'G',
            SizeUnit::Tera => 'T',
            SizeUnit::Peta => 'P',
            SizeUnit::Exa => 'E',
        }
    }

    fn next(self) -> Option<SizeUnit> {
        let i = SizeUnit::ALL.iter().position(|u| *u == self)?;
        SizeUnit::ALL.get(i + 1).copied()
    }
}

/// Parses a memory amount in megabytes: `--mem`, `--mem-per-cpu`,
/// `--mem-per-gpu`, `DefMemPerCPU=`, `MaxMemPerNode=` and friends.
///
/// A decimal number with an optional case-insensitive suffix: none or `M`
/// for megabytes, `K` for kilobytes (rounded up to a whole megabyte, so
/// `1K` is 1), `G`, `T`; `P` and `E` are also read so that everything
/// [`format_mem_mb`] prints reads back. A trailing `B` (`4GB`) is allowed.
/// `0` is valid: `--mem=0` asks for all of a node's memory.
pub fn parse_mem_mb(s: &str) -> Result<u64, SizeError> {
    let invalid = || SizeError::Invalid {
        input: s.to_owned(),
    };
    let overflow = || SizeError::Overflow {
        input: s.to_owned(),
    };
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, suffix) = s.split_at(digits_end);
    if digits.is_empty() {
        return Err(invalid());
    }
    // Only digits, so a parse failure means the number is too big.
    let n: u64 = digits.parse().map_err(|_| overflow())?;
    let suffix = suffix.to_ascii_uppercase();
    let letter = suffix.strip_suffix('B').unwrap_or(&suffix);
    // Multiplier from megabytes, as a power of 1024.
    let power: u32 = match letter {
        "" | "M" => 0,
        "K" => return Ok(n.div_ceil(1024)),
        "G" => 1,
        "T" => 2,
        "P" => 3,
        "E" => 4,
        _ => return Err(invalid()),
    };
    1024u64
        .checked_pow(power)
        .and_then(|factor| n.checked_mul(factor))
        .ok_or_else(overflow)
}

/// Formats a count kept in `unit` with the largest suffix that divides it
/// exactly, as Slurm's exact unit conversion does: `4000M`, `1G`, `1240K`.
/// Zero prints as a bare `0`.
pub fn format_size_exact(value: u64, unit: SizeUnit) -> String {
    if value == 0 {
        return "0".to_owned();
    }
    let mut n = value;
    let mut unit = unit;
    while n % 1024 == 0 {
        match unit.next() {
            Some(bigger) => {
                n /= 1024;
                unit = bigger;
            }
            None => break,
        }
    }
    format!("{n}{}", unit.suffix())
}

/// Megabytes as TRES strings (`mem=4000M`), `squeue %m` and `sacct`'s
/// `ReqMem` print them: `4000M`, `1G`, `0`.
pub fn format_mem_mb(mb: u64) -> String {
    format_size_exact(mb, SizeUnit::Mega)
}

/// Megabytes as a bare number, as `sinfo` (`MEMORY`, `%m`) and `scontrol
/// show node` (`RealMemory=`, `AllocMem=`, `FreeMem=`) and `scontrol show
/// job` (`MinMemoryNode=`) print them: `4000`.
pub fn format_mem_mb_plain(mb: u64) -> String {
    mb.to_string()
}

/// Kilobytes as `sacct` prints usage (`MaxRSS`, `MaxVMSize`, the `mem=` and
/// `vmem=` of `TRESUsageIn*`): `1240K`, `78956K`, `0`.
pub fn format_kb(kb: u64) -> String {
    format_size_exact(kb, SizeUnit::Kilo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_every_suffix() {
        let cases: &[(&str, u64)] = &[
            ("0", 0),
            ("4000", 4000),
            ("4000M", 4000),
            ("4000m", 4000),
            ("4000MB", 4000),
            ("1G", 1024),
            ("1g", 1024),
            ("2GB", 2048),
            ("1T", 1024 * 1024),
            ("1P", 1024 * 1024 * 1024),
            ("1E", 1 << 40),
            ("1K", 1),
            ("1024K", 1),
            ("1025k", 2),
            ("0K", 0),
            ("999999999", 999_999_999),
        ];
        for (input, want) in cases {
            assert_eq!(parse_mem_mb(input), Ok(*want), "input {input:?}");
        }
    }

    #[test]
    fn rejects_malformed_sizes_naming_the_input() {
        for input in [
            "", "M", "G", "abc", "1.5G", "-1", "+4G", " 4G", "4G ", "4X", "4GiB", "4 G", "4MM",
            "１G", "4Ｇ",
        ] {
            assert_eq!(
                parse_mem_mb(input),
                Err(SizeError::Invalid {
                    input: input.to_owned()
                }),
                "input {input:?}"
            );
        }
        let err = parse_mem_mb("abc").err().map(|e| e.to_string());
        assert_eq!(err.as_deref(), Some("invalid memory specification \"abc\""));
    }

    #[test]
    fn huge_sizes_overflow_instead_of_wrapping() {
        for input in [
            "18446744073709551616",
            "99999999999999999999999",
            "18014398509481984G",
            "17592186044416T",
            "16777216E",
        ] {
            assert_eq!(
                parse_mem_mb(input),
                Err(SizeError::Overflow {
                    input: input.to_owned()
                }),
                "input {input:?}"
            );
        }
        assert_eq!(parse_mem_mb("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(
            parse_mem_mb("18446744073709551615K"),
            Ok(u64::MAX.div_ceil(1024))
        );
        assert_eq!(parse_mem_mb("15E"), Ok(15 << 40));
    }

    #[test]
    fn formats_like_the_captured_outputs() {
        // TRES strings in scontrol_show_node.out, scontrol_show_partition.out
        // and sacct ReqMem in sacct_j_long.out.
        assert_eq!(format_mem_mb(4000), "4000M");
        assert_eq!(format_mem_mb(16000), "16000M");
        assert_eq!(format_mem_mb(999_999_999), "999999999M");
        assert_eq!(format_mem_mb(0), "0");
        // sacct MaxRSS / MaxVMSize in sacct_j_long.out.
        assert_eq!(format_kb(1240), "1240K");
        assert_eq!(format_kb(78956), "78956K");
        assert_eq!(format_kb(0), "0");
        // sinfo_N_l.out MEMORY, scontrol_show_node.out RealMemory=.
        assert_eq!(format_mem_mb_plain(4000), "4000");
    }

    #[test]
    fn exact_conversion_climbs_while_divisible() {
        assert_eq!(format_mem_mb(1024), "1G");
        assert_eq!(format_mem_mb(1536), "1536M");
        assert_eq!(format_mem_mb(2048 * 1024), "2T");
        assert_eq!(format_mem_mb(1 << 30), "1P");
        assert_eq!(format_mem_mb(1 << 40), "1E");
        assert_eq!(format_mem_mb(1 << 50), "1024E");
        assert_eq!(format_kb(1024), "1M");
        assert_eq!(format_kb(4_096_000), "4000M");
        assert_eq!(
            format_size_exact(u64::MAX, SizeUnit::Kilo),
            "18446744073709551615K"
        );
    }

    proptest! {
        #[test]
        fn format_then_parse_gives_back_the_megabytes(mb in any::<u64>()) {
            prop_assert_eq!(parse_mem_mb(&format_mem_mb(mb)), Ok(mb));
            prop_assert_eq!(parse_mem_mb(&format_mem_mb_plain(mb)), Ok(mb));
        }

        #[test]
        fn small_sizes_round_trip_through_every_shape(
            n in 0u64..1 << 20,
            power in 0u32..4,
        ) {
            let mb = n * 1024u64.pow(power);
            prop_assert_eq!(parse_mem_mb(&format_mem_mb(mb)), Ok(mb));
        }

        #[test]
        fn parse_never_panics(s in ".*") {
            let _ = parse_mem_mb(&s);
        }

        #[test]
        fn parse_never_panics_on_size_like_input(s in "[0-9kKmMgGtTpPeEbB.+ -]{0,30}") {
            let _ = parse_mem_mb(&s);
        }

        #[test]
        fn kilobytes_round_up(kb in 0u64..u64::MAX / 2) {
            prop_assert_eq!(parse_mem_mb(&format!("{kb}K")), Ok(kb.div_ceil(1024)));
        }
    }
}
