//! slurmctld's command line, with Slurm's flags.

use std::path::PathBuf;

/// Parsed command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cli {
    /// `-D`: stay in the foreground, log to stderr unless `-L`.
    pub foreground: bool,
    /// `-f file`.
    pub conf: Option<PathBuf>,
    /// `-L file`.
    pub log_file: Option<PathBuf>,
    /// Number of `-v`.
    pub verbose: u8,
    /// `-i`: start even when the saved state is damaged (it is set aside).
    pub ignore_state_errors: bool,
    /// `-V`.
    pub version: bool,
    /// `-h`/`--help`.
    pub help: bool,
}

pub const USAGE: &str = "\
Usage: slurmctld [OPTIONS]
  -D            Run daemon in foreground, with logging copied to stdout
  -f file       Use specified file for slurmctld configuration
  -h            Print this help message
  -i            Ignore errors found while reading in state files on startup
  -L logfile    Log messages to the specified file
  -v            Verbose mode. Multiple -v's increase verbosity
  -V            Print version information and exit
";

/// Parses `args` (without the program name). `Err` is the message to print
/// before the usage.
pub fn parse(args: &[String]) -> Result<Cli, String> {
    let mut cli = Cli::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--help" => cli.help = true,
            "--version" => cli.version = true,
            a if a.starts_with('-') && a.len() > 1 && !a.starts_with("--") => {
                let flags: Vec<char> = a[1..].chars().collect();
                let mut i = 0;
                while i < flags.len() {
                    match flags[i] {
                        'D' => cli.foreground = true,
                        'v' => cli.verbose = cli.verbose.saturating_add(1),
                        'V' => cli.version = true,
                        'h' => cli.help = true,
                        'i' => cli.ignore_state_errors = true,
                        c @ ('f' | 'L') => {
                            let rest: String = flags[i + 1..].iter().collect();
                            let value = if rest.is_empty() {
                                it.next().cloned().ok_or_else(|| {
                                    format!("option requires an argument -- '{c}'")
                                })?
                            } else {
                                rest
                            };
                            if c == 'f' {
                                cli.conf = Some(PathBuf::from(value));
                            } else {
                                cli.log_file = Some(PathBuf::from(value));
                            }
                            break;
                        }
                        c => return Err(format!("invalid option -- '{c}'")),
                    }
                    i += 1;
                }
            }
            other => return Err(format!("unrecognized option '{other}'")),
        }
    }
    Ok(cli)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Cli, String> {
        parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn flags() {
        let c = p(&["-D", "-f", "/x/slurm.conf", "-vvv", "-L/tmp/log"]).unwrap();
        assert!(c.foreground);
        assert_eq!(c.conf, Some(PathBuf::from("/x/slurm.conf")));
        assert_eq!(c.log_file, Some(PathBuf::from("/tmp/log")));
        assert_eq!(c.verbose, 3);
        assert!(p(&["-V"]).unwrap().version);
        assert!(p(&["-Dv"]).unwrap().foreground);
        assert_eq!(p(&["-x"]), Err("invalid option -- 'x'".to_string()));
        assert!(p(&["-f"]).is_err());
        assert!(p(&["--bogus"]).is_err());
        assert!(p(&["\u{e9}"]).is_err());
    }
}
