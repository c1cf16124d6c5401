//! `scontrol suspend`, `scontrol resume` and `scontrol top`.
//!
//! Slurm's scontrol takes each argument of `suspend` and `resume` on its
//! own: one that is not a job list is refused (`Invalid job id specified
//! for job ARG`) and the others still go, and a failure names the job it
//! concerns (`Job is pending execution for job 7`). `top` takes exactly one
//! job list, sent whole; its refusal names the list as given. Each argument
//! may start with `JobId=` or `Job=`, in any case, as in Slurm. Any failure
//! makes the exit status 1. The controller decides everything else
//! (`slurmctld::core::suspend`).

use slurm_proto::v1;
use slurm_proto::ErrorCode;

use super::controller::{parse_job_list, report_results, CtlCommand, CtlError};
use crate::client::Controller;
use crate::output::Output;

/// One argument of `suspend` or `resume`.
#[derive(Debug, Clone, PartialEq)]
pub enum JobArg {
    /// The jobs it names; `text` is the argument without its `JobId=`.
    Jobs {
        text: String,
        filter: Box<v1::JobFilter>,
    },
    /// Not a job list (the argument without its `JobId=`).
    Invalid(String),
}

/// `suspend` (or with `resume`, `resume`) of each argument in turn.
#[derive(Debug, Clone, PartialEq)]
pub struct SuspendCommand {
    pub resume: bool,
    pub args: Vec<JobArg>,
}

/// `top JOB_LIST`.
#[derive(Debug, Clone, PartialEq)]
pub struct TopCommand {
    /// The list as given (without its `JobId=`), for the error line.
    pub text: String,
    pub filter: v1::JobFilter,
}

/// The argument without a leading `JobId=` and then `Job=` (either case),
/// as Slurm strips them.
fn without_prefix(arg: &str) -> &str {
    let strip = |s: &'_ str, prefix: &str| -> Option<usize> {
        s.get(..prefix.len())
            .filter(|head| head.eq_ignore_ascii_case(prefix))
            .map(|_| prefix.len())
    };
    let arg = strip(arg, "jobid=").map_or(arg, |n| &arg[n..]);
    strip(arg, "job=").map_or(arg, |n| &arg[n..])
}

fn few(tag: &str) -> CtlError {
    CtlError(vec![format!("too few arguments for keyword:{tag}")])
}

/// `suspend ARG...` or `resume ARG...`; `tag` is the keyword as typed,
/// which Slurm repeats when there is no argument.
pub fn parse_suspend(tag: &str, resume: bool, args: &[String]) -> Result<CtlCommand, CtlError> {
    if args.is_empty() {
        return Err(few(tag));
    }
    let args = args
        .iter()
        .map(|arg| {
            let text = without_prefix(arg).to_owned();
            match parse_job_list(std::slice::from_ref(&text)) {
                Ok(filter) => JobArg::Jobs {
                    text,
                    filter: Box::new(filter),
                },
                Err(_) => JobArg::Invalid(text),
            }
        })
        .collect();
    Ok(CtlCommand::Suspend(Box::new(SuspendCommand {
        resume,
        args,
    })))
}

/// `top JOB_LIST`: exactly one argument.
pub fn parse_top(tag: &str, args: &[String]) -> Result<CtlCommand, CtlError> {
    let [arg] = args else {
        if args.is_empty() {
            return Err(few(tag));
        }
        return Err(CtlError(vec![format!(
            "too many arguments for keyword:{tag}"
        )]));
    };
    let text = without_prefix(arg).to_owned();
    match parse_job_list(std::slice::from_ref(&text)) {
        Ok(filter) => Ok(CtlCommand::Top(Box::new(TopCommand { text, filter }))),
        Err(_) => Err(invalid(&text)),
    }
}

/// Slurm's line for an argument that is not a job list.
fn invalid(text: &str) -> CtlError {
    CtlError(vec![format!("{} for job {text}", ErrorCode::InvalidJobId)])
}

/// Sends each argument of `cmd`; the exit status.
pub async fn suspend(c: &mut Controller, cmd: &SuspendCommand, out: &mut Output<'_>) -> i32 {
    let mut status = 0;
    for arg in &cmd.args {
        let (text, filter) = match arg {
            JobArg::Invalid(text) => {
                for line in invalid(text).0 {
                    out.error_line(&line);
                }
                status = 1;
                continue;
            }
            JobArg::Jobs { text, filter } => (text, filter),
        };
        let request = v1::SuspendJobRequest {
            filter: Some((**filter).clone()),
            resume: cmd.resume,
        };
        let reply = c
            .call(|mut cl| {
                let request = request.clone();
                async move { cl.suspend_job(request).await }
            })
            .await;
        let code = match reply {
            Ok(r) => report_results(out, &r.results),
            Err(e) => {
                out.error_line(&format!("{e} for job {text}"));
                1
            }
        };
        status = status.max(code);
    }
    status
}

/// Sends `top`; the exit status.
pub async fn top(c: &mut Controller, cmd: &TopCommand, out: &mut Output<'_>) -> i32 {
    let request = v1::TopJobRequest {
        filter: Some(cmd.filter.clone()),
    };
    let reply = c
        .call(|mut cl| {
            let request = request.clone();
            async move { cl.top_job(request).await }
        })
        .await;
    match reply {
        Ok(_) => 0,
        Err(e) => {
            out.error_line(&format!("{e} for job {}", cmd.text));
            1
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::{Command, CommandError};
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    fn parsed(line: &str) -> CtlCommand {
        match Command::parse(&words(line)) {
            Ok(Command::Controller(c)) => *c,
            other => panic!("{line}: {other:?}"),
        }
    }

    fn refused(line: &str) -> Vec<String> {
        match Command::parse(&words(line)) {
            Err(CommandError::Controller(CtlError(lines))) => lines,
            other => panic!("{line}: {other:?}"),
        }
    }

    fn jobs(ids: &[u32]) -> v1::JobFilter {
        v1::JobFilter {
            job_ids: ids.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn suspend_and_resume_take_each_argument_on_its_own() {
        let want = |resume, args| CtlCommand::Suspend(Box::new(SuspendCommand { resume, args }));
        assert_eq!(
            parsed("suspend 5,6 JobId=7 job=8_2 abc"),
            want(
                false,
                vec![
                    JobArg::Jobs {
                        text: "5,6".into(),
                        filter: Box::new(jobs(&[5, 6]))
                    },
                    JobArg::Jobs {
                        text: "7".into(),
                        filter: Box::new(jobs(&[7]))
                    },
                    JobArg::Jobs {
                        text: "8_2".into(),
                        filter: Box::new(v1::JobFilter {
                            array_tasks: vec![v1::ArrayTaskSelector {
                                array_job_id: 8,
                                task_spec: "2".into()
                            }],
                            ..Default::default()
                        })
                    },
                    JobArg::Invalid("abc".into()),
                ]
            )
        );
        // Slurm's shortest forms: `su`, `res`; any case.
        for line in ["su 5", "SUSP 5", "suspend 5"] {
            assert!(
                matches!(parsed(line), CtlCommand::Suspend(s) if !s.resume),
                "{line}"
            );
        }
        for line in ["res 5", "Resume 5"] {
            assert!(
                matches!(parsed(line), CtlCommand::Suspend(s) if s.resume),
                "{line}"
            );
        }
        // `re` is not enough (requeue, release, reconfigure...).
        assert!(matches!(
            Command::parse(&words("re 5")),
            Err(CommandError::InvalidKeyword(_))
        ));
        assert_eq!(refused("susp"), vec!["too few arguments for keyword:susp"]);
        assert_eq!(
            refused("resume"),
            vec!["too few arguments for keyword:resume"]
        );
    }

    #[test]
    fn top_takes_one_job_list() {
        assert_eq!(
            parsed("top JOBID=9,4"),
            CtlCommand::Top(Box::new(TopCommand {
                text: "9,4".into(),
                filter: jobs(&[9, 4])
            }))
        );
        assert_eq!(refused("top"), vec!["too few arguments for keyword:top"]);
        assert_eq!(
            refused("TOP 1 2"),
            vec!["too many arguments for keyword:TOP"]
        );
        assert_eq!(
            refused("top x1"),
            vec!["Invalid job id specified for job x1"]
        );
        assert!(matches!(
            Command::parse(&words("to 5")),
            Err(CommandError::InvalidKeyword(_))
        ));
    }

    #[test]
    fn prefixes_are_stripped_once_each_in_slurms_order() {
        assert_eq!(without_prefix("jobid=5"), "5");
        assert_eq!(without_prefix("JOB=5"), "5");
        assert_eq!(without_prefix("JobId=Job=5"), "5");
        assert_eq!(without_prefix("job=jobid=5"), "jobid=5");
        assert_eq!(without_prefix("jo"), "jo");
        assert_eq!(without_prefix("jöbid=5"), "jöbid=5");
        assert_eq!(without_prefix(""), "");
    }
}
