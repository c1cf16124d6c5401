//! The environment files of a resized job.
//!
//! `scontrol update JobId=N NumNodes=...` run with `SLURM_JOBID=N` (as it
//! is inside job N) writes, once the update is accepted, two scripts in the
//! current directory that set the job's environment to its size now:
//! `slurm_job_N_resize.sh` and `slurm_job_N_resize.csh`. Slurm 22.05 does
//! this whether or not the count changed, reads `SLURM_JOBID` as `atoi`
//! does, and keeps the exit status 0 when the files cannot be written.

use std::fs::{self, File, Permissions};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use slurm_common::counts::compress_counts;

/// The job id `SLURM_JOBID` names, read as C's `atoi`: leading blanks, an
/// optional sign, then digits; what follows them is ignored. `None` when
/// it names no job (no digits, zero, negative, or out of range).
pub fn env_job_id(value: &str) -> Option<u32> {
    let rest = value.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, rest) = match rest.as_bytes().first() {
        Some(b'-') => (true, &rest[1..]),
        Some(b'+') => (false, &rest[1..]),
        _ => (false, rest),
    };
    let digits: &str = &rest[..rest.bytes().take_while(u8::is_ascii_digit).count()];
    let id: u32 = digits.parse().ok()?;
    (!negative && id != 0).then_some(id)
}

/// The allocation the files describe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    pub job_id: u32,
    /// The job's nodes as a hostlist expression.
    pub nodes: String,
    pub node_count: u32,
    /// CPUs on each node, in node order.
    pub cpus_per_node: Vec<u32>,
}

impl Allocation {
    /// The file names, `.sh` first.
    pub fn file_names(&self) -> (String, String) {
        let id = self.job_id;
        (
            format!("slurm_job_{id}_resize.sh"),
            format!("slurm_job_{id}_resize.csh"),
        )
    }

    /// The texts of the `.sh` and `.csh` files.
    pub fn texts(&self) -> (String, String) {
        let cpus = compress_counts(&self.cpus_per_node);
        let quoted = [
            ("SLURM_NODELIST", &self.nodes),
            ("SLURM_JOB_NODELIST", &self.nodes),
        ];
        let counts = [
            ("SLURM_NNODES", self.node_count),
            ("SLURM_JOB_NUM_NODES", self.node_count),
        ];
        let unset = ["SLURM_NPROCS", "SLURM_NTASKS", "SLURM_TASKS_PER_NODE"];
        let mut sh = String::new();
        let mut csh = String::new();
        for (k, v) in quoted {
            sh.push_str(&format!("export {k}=\"{v}\"\n"));
            csh.push_str(&format!("setenv {k} \"{v}\"\n"));
        }
        for (k, v) in counts {
            sh.push_str(&format!("export {k}={v}\n"));
            csh.push_str(&format!("setenv {k} {v}\n"));
        }
        sh.push_str(&format!("export SLURM_JOB_CPUS_PER_NODE=\"{cpus}\"\n"));
        csh.push_str(&format!("setenv SLURM_JOB_CPUS_PER_NODE \"{cpus}\"\n"));
        for k in unset {
            sh.push_str(&format!("unset {k}\n"));
            csh.push_str(&format!("unsetenv {k}\n"));
        }
        (sh, csh)
    }

    /// What scontrol prints once the files are written.
    pub fn message(&self) -> String {
        let (sh, csh) = self.file_names();
        format!(
            "To reset Slurm environment variables, execute\n  \
             For bash or sh shells:  . ./{sh}\n  \
             For csh shells:         source ./{csh}\n"
        )
    }

    /// Writes both files in `dir`, owner-only (0700) as Slurm leaves them.
    /// As Slurm, the `.csh` file is created first, and a file that cannot
    /// be created ends the work there: the error is Slurm's line,
    /// `Could not create file NAME: <reason>`.
    pub fn write_files(&self, dir: &Path) -> Result<(), String> {
        let (sh_name, csh_name) = self.file_names();
        let (sh_text, csh_text) = self.texts();
        let create = |name: &str| {
            let path = dir.join(name);
            // A file left from an earlier resize is replaced.
            let _ = fs::remove_file(&path);
            File::create(&path).map_err(|e| {
                format!(
                    "Could not create file {name}: {}",
                    slurm_common::os_error_text(&e)
                )
            })
        };
        let mut csh = create(&csh_name)?;
        let mut sh = create(&sh_name)?;
        let write = |file: &mut File, name: &str, text: &str| {
            file.set_permissions(Permissions::from_mode(0o700))
                .and_then(|()| file.write_all(text.as_bytes()))
                .map_err(|e| {
                    format!(
                        "Could not write file {name}: {}",
                        slurm_common::os_error_text(&e)
                    )
                })
        };
        write(&mut csh, &csh_name, &csh_text)?;
        write(&mut sh, &sh_name, &sh_text)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn two_nodes() -> Allocation {
        Allocation {
            job_id: 7,
            nodes: "n[1-2]".into(),
            node_count: 2,
            cpus_per_node: vec![2, 2],
        }
    }

    #[test]
    fn slurm_jobid_is_read_as_atoi_reads_it() {
        for (text, want) in [
            ("7", Some(7)),
            (" 7", Some(7)),
            ("7x", Some(7)),
            ("+7", Some(7)),
            ("-7", None),
            ("0", None),
            ("x7", None),
            ("", None),
            ("99999999999", None),
        ] {
            assert_eq!(env_job_id(text), want, "{text:?}");
        }
    }

    /// The texts Slurm 22.05 wrote for a job left on one node of 2 CPUs.
    #[test]
    fn texts_are_slurms() {
        let one = Allocation {
            job_id: 2,
            nodes: "vm3".into(),
            node_count: 1,
            cpus_per_node: vec![2],
        };
        let (sh, csh) = one.texts();
        assert_eq!(
            sh,
            "export SLURM_NODELIST=\"vm3\"\nexport SLURM_JOB_NODELIST=\"vm3\"\n\
             export SLURM_NNODES=1\nexport SLURM_JOB_NUM_NODES=1\n\
             export SLURM_JOB_CPUS_PER_NODE=\"2\"\nunset SLURM_NPROCS\n\
             unset SLURM_NTASKS\nunset SLURM_TASKS_PER_NODE\n"
        );
        assert_eq!(
            csh,
            "setenv SLURM_NODELIST \"vm3\"\nsetenv SLURM_JOB_NODELIST \"vm3\"\n\
             setenv SLURM_NNODES 1\nsetenv SLURM_JOB_NUM_NODES 1\n\
             setenv SLURM_JOB_CPUS_PER_NODE \"2\"\nunsetenv SLURM_NPROCS\n\
             unsetenv SLURM_NTASKS\nunsetenv SLURM_TASKS_PER_NODE\n"
        );
        assert_eq!(
            one.message(),
            "To reset Slurm environment variables, execute\n  \
             For bash or sh shells:  . ./slurm_job_2_resize.sh\n  \
             For csh shells:         source ./slurm_job_2_resize.csh\n"
        );
        assert!(two_nodes()
            .texts()
            .0
            .contains("SLURM_JOB_CPUS_PER_NODE=\"2(x2)\""));
    }

    #[test]
    fn files_are_written_owner_only_and_replace_old_ones() {
        let dir = tempfile::tempdir().unwrap();
        let a = two_nodes();
        fs::write(dir.path().join("slurm_job_7_resize.sh"), "old").unwrap();
        a.write_files(dir.path()).unwrap();
        let (sh, csh) = a.file_names();
        for (name, text) in [(sh, a.texts().0), (csh, a.texts().1)] {
            let path = dir.path().join(name);
            assert_eq!(fs::read_to_string(&path).unwrap(), text);
            let mode = fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
    }

    /// As Slurm: the `.csh` file is made first; a `.sh` name that is taken
    /// by a directory stops the work with Slurm's line.
    #[test]
    fn a_file_that_cannot_be_made_is_named() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("slurm_job_7_resize.sh")).unwrap();
        let e = two_nodes().write_files(dir.path()).unwrap_err();
        assert_eq!(
            e,
            "Could not create file slurm_job_7_resize.sh: Is a directory"
        );
        assert!(dir.path().join("slurm_job_7_resize.csh").is_file());
        let missing = dir.path().join("nowhere");
        let e = two_nodes().write_files(&missing).unwrap_err();
        assert_eq!(
            e,
            "Could not create file slurm_job_7_resize.csh: No such file or directory"
        );
    }
}
