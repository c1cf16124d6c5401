//! `--gres` requests, held against the Gres= of the nodes in slurm.conf.
//!
//! GRES are not scheduled yet: nothing counts which of a node's GPUs the
//! jobs running there hold. Until they are, a job's `--gres` is a placement
//! rule, like a required feature, so that a job asking for a GPU never runs
//! on a node without one:
//!
//! * at submission (and when `scontrol update` changes the `Gres=` of a
//!   pending job) the request must parse and name GRES slurm.conf knows
//!   (GresTypes, or a node's Gres=); otherwise Slurm's "Invalid generic
//!   resource (gres) specification";
//! * some node of the partition must have, as configured, at least the
//!   count asked for of each GRES (of the type, if one is given); otherwise
//!   "Requested node configuration is not available", as Slurm answers a
//!   request no node can ever satisfy;
//! * the job is placed only on nodes that have it: `gres_excluded` adds
//!   the others to the excluded nodes of its scheduler request.
//!
//! Not done yet (GRES scheduling proper, in `slurm_sched`): counting the
//! GRES in use per node, so that two one-GPU jobs do not share a one-GPU
//! node; binding devices; `--gpus*`; GRES in the job's TRES.

use slurm_common::conf::GresSpec;
use slurm_proto::ErrorCode;
use thiserror::Error;

use super::Controller;

/// One item of a job's `--gres`: `name[:type][:count]`, per node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GresRequest {
    pub name: String,
    /// `None`: any type.
    pub gres_type: Option<String>,
    pub count: u64,
}

/// Why a `--gres` value is refused (ESLURM_INVALID_GRES).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GresRequestError {
    #[error("gres item {item:?} is not name[:type][:count]")]
    Malformed { item: String },
    #[error("gres {name:?} is not configured (GresTypes, or a node's Gres=)")]
    Unknown { name: String },
}

/// Parses a job's `--gres` value (`gpu:2,gpu:a100:1`). Empty and `none`
/// ask for nothing; an item may carry the `gres:` prefix that Slurm's own
/// TresPerNode shows; empty items are skipped, as Slurm's parser skips
/// them; an item with a count of 0 asks for nothing. Socket bindings
/// (`(S:0)`) belong to node lines, not to requests.
pub fn parse_request(spec: &str) -> Result<Vec<GresRequest>, GresRequestError> {
    let spec = spec.trim();
    if spec.is_empty() || spec.eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for raw in spec.split(',') {
        let item = raw.trim();
        if item.is_empty() {
            continue;
        }
        let body = item.strip_prefix("gres:").unwrap_or(item);
        let malformed = || GresRequestError::Malformed {
            item: item.to_string(),
        };
        if body.contains(['(', ')']) {
            return Err(malformed());
        }
        let parsed = GresSpec::parse(body).ok_or_else(malformed)?;
        // `gpu:99999999999999999999` is a count too large, not a type.
        if parsed.gres_type.as_deref().is_some_and(looks_like_count) {
            return Err(malformed());
        }
        if parsed.count > 0 {
            out.push(GresRequest {
                name: parsed.name,
                gres_type: parsed.gres_type,
                count: parsed.count,
            });
        }
    }
    Ok(out)
}

/// Digits with at most a unit suffix (`4`, `2K`): a count, never a type
/// (a type may start with a digit, as MIG profiles do: `1g.5gb`).
fn looks_like_count(t: &str) -> bool {
    let digits = t
        .strip_suffix(|c: char| matches!(c.to_ascii_uppercase(), 'K' | 'M' | 'G' | 'T' | 'P'))
        .unwrap_or(t);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Whether a node configured with `have` has every GRES of `want`, each in
/// the count asked for (counting every type of the name when the request
/// names none). Items are held against the node one by one: `gpu:2,gpu:a100:1`
/// needs two GPUs of any type and one A100 among them or beside them.
pub fn node_covers(have: &[GresSpec], want: &[GresRequest]) -> bool {
    want.iter().all(|w| {
        let total = have
            .iter()
            .filter(|g| g.name == w.name)
            .filter(|g| {
                w.gres_type.as_deref().is_none_or(|t| {
                    g.gres_type
                        .as_deref()
                        .is_some_and(|gt| gt.eq_ignore_ascii_case(t))
                })
            })
            .fold(0u64, |sum, g| sum.saturating_add(g.count));
        total >= w.count
    })
}

/// A job's `--gres` as Slurm 22.05 shows it (TresPerNode in `scontrol
/// show job`, squeue's `%b` and `tres-per-node`, `tres_per_node` in JSON):
/// each item with the `gres:` prefix Slurm's commands put before it when
/// they submit the job, so `gpu:1,gpu:a100:2` shows as
/// `gres:gpu:1,gres:gpu:a100:2`. An item that has the prefix already keeps
/// it; empty items are dropped. Empty (nothing shown) for no request and
/// for `none`.
pub fn tres_per_node(spec: &str) -> String {
    let spec = spec.trim();
    if spec.is_empty() || spec.eq_ignore_ascii_case("none") {
        return String::new();
    }
    let mut out = String::with_capacity(spec.len() + 8);
    for item in spec.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        if !out.is_empty() {
            out.push(',');
        }
        if !item.starts_with("gres:") {
            out.push_str("gres:");
        }
        out.push_str(item);
    }
    out
}

impl Controller {
    /// The configured Gres= of node `i` (none for an index out of range).
    fn node_gres(&self, i: usize) -> &[GresSpec] {
        self.nodes.get(i).map_or(&[], |n| n.gres.as_slice())
    }

    /// Checks a submission's `--gres` against slurm.conf. `Ok(None)`: it
    /// asks for nothing or some node of `members` has it; `Ok(Some(_))`
    /// names a request no member has as configured.
    pub(crate) fn check_gres(
        &self,
        spec: &str,
        members: &[usize],
    ) -> Result<Option<Vec<GresRequest>>, GresRequestError> {
        let want = parse_request(spec)?;
        if want.is_empty() {
            return Ok(None);
        }
        for w in &want {
            let known = self
                .cfg
                .gres_types
                .iter()
                .any(|t| t.eq_ignore_ascii_case(&w.name))
                || self
                    .nodes
                    .iter()
                    .flat_map(|n| &n.gres)
                    .any(|g| g.name == w.name);
            if !known {
                return Err(GresRequestError::Unknown {
                    name: w.name.clone(),
                });
            }
        }
        let somewhere = members
            .iter()
            .any(|&i| node_covers(self.node_gres(i), &want));
        Ok((!somewhere).then_some(want))
    }

    /// Why `spec` may not be a job's `--gres` on the nodes `members`, as a
    /// code: "Invalid generic resource (gres) specification" for a request
    /// that does not parse or names a GRES slurm.conf does not know,
    /// "Requested node configuration is not available" for one no member
    /// has; `None` when it is fine (or asks for nothing). What `scontrol
    /// update JobId= Gres=` answers, as a submission does.
    pub(crate) fn gres_refusal(&self, spec: &str, members: &[usize]) -> Option<ErrorCode> {
        match self.check_gres(spec, members) {
            Ok(None) => None,
            Ok(Some(_)) => {
                tracing::info!(gres = %spec, "no node of the partition has the gres asked for");
                Some(ErrorCode::RequestedNodeConfigUnavailable)
            }
            Err(e) => {
                tracing::info!(gres = %spec, error = %e, "invalid gres request");
                Some(ErrorCode::InvalidGres)
            }
        }
    }

    /// The nodes a job with `--gres` `spec` must not run on: those whose
    /// configured Gres= lacks some of it. A spec that does not parse (it
    /// was refused at submission, so only a foreign journal has one)
    /// excludes every node: the job waits rather than run without it.
    pub(crate) fn gres_excluded(&self, spec: &str) -> Vec<usize> {
        match parse_request(spec) {
            Ok(want) if want.is_empty() => Vec::new(),
            Ok(want) => (0..self.nodes.len())
                .filter(|&i| !node_covers(self.node_gres(i), &want))
                .collect(),
            Err(_) => (0..self.nodes.len()).collect(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn req(name: &str, ty: Option<&str>, count: u64) -> GresRequest {
        GresRequest {
            name: name.into(),
            gres_type: ty.map(Into::into),
            count,
        }
    }

    fn node(text: &str) -> Vec<GresSpec> {
        GresSpec::parse_list(text).unwrap()
    }

    #[test]
    fn request_forms() {
        assert_eq!(
            parse_request("gpu:2,gpu:a100:1").unwrap(),
            vec![req("gpu", None, 2), req("gpu", Some("a100"), 1)]
        );
        assert_eq!(parse_request("gpu").unwrap(), vec![req("gpu", None, 1)]);
        assert_eq!(
            parse_request("gpu:tesla").unwrap(),
            vec![req("gpu", Some("tesla"), 1)]
        );
        assert_eq!(
            parse_request(" gres:gpu:1 , ").unwrap(),
            vec![req("gpu", None, 1)]
        );
        assert_eq!(
            parse_request("mps:2K").unwrap(),
            vec![req("mps", None, 2048)]
        );
        assert_eq!(
            parse_request("gpu:1g.5gb:2").unwrap(),
            vec![req("gpu", Some("1g.5gb"), 2)]
        );
        for nothing in ["", "  ", "none", "NONE", "gpu:0", ","] {
            assert_eq!(parse_request(nothing).unwrap(), vec![], "{nothing:?}");
        }
    }

    #[test]
    fn malformed_requests() {
        for bad in [
            "gpu:a:b:c",
            ":1",
            "gpu:a100:x",
            "gpu(S:0)",
            "gpu:1(S:0-1)",
            "gpu:1)",
            "gp u:1",
            "gpu:99999999999999999999",
            "gpu:18446744073709551615K",
            "g\u{e9}u:1",
            "gpu:[1",
            "gres:",
        ] {
            assert!(
                matches!(parse_request(bad), Err(GresRequestError::Malformed { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_node_covers_what_it_has_in_the_count_asked() {
        let two = node("gpu:2");
        let mixed = node("gpu:a100:1,gpu:v100:2,shard:8");
        assert!(node_covers(&two, &[req("gpu", None, 2)]));
        assert!(!node_covers(&two, &[req("gpu", None, 3)]));
        assert!(!node_covers(&two, &[req("gpu", Some("a100"), 1)]));
        assert!(node_covers(&mixed, &[req("gpu", None, 3)]));
        assert!(node_covers(&mixed, &[req("gpu", Some("A100"), 1)]));
        assert!(!node_covers(&mixed, &[req("gpu", Some("a100"), 2)]));
        assert!(node_covers(
            &mixed,
            &[req("gpu", Some("v100"), 2), req("shard", None, 8)]
        ));
        assert!(!node_covers(&[], &[req("gpu", None, 1)]));
        assert!(node_covers(&[], &[]));
    }

    #[test]
    fn tres_per_node_puts_the_gres_prefix_before_each_item() {
        assert_eq!(tres_per_node("gpu:1"), "gres:gpu:1");
        assert_eq!(
            tres_per_node("gpu:2, gpu:a100:1,"),
            "gres:gpu:2,gres:gpu:a100:1"
        );
        assert_eq!(
            tres_per_node("gres:gpu:1,mps:100"),
            "gres:gpu:1,gres:mps:100"
        );
        for nothing in ["", " ", "none", "None", ",,"] {
            assert_eq!(tres_per_node(nothing), "", "{nothing:?}");
        }
    }

    proptest! {
        /// Whatever was accepted shows with one prefix per item and parses
        /// back to the same request.
        #[test]
        fn tres_per_node_parses_back_to_the_request(s in "\\PC{0,40}") {
            if let Ok(reqs) = parse_request(&s) {
                let shown = tres_per_node(&s);
                prop_assert!(shown.split(',').all(|i| i.is_empty() || i.starts_with("gres:")));
                prop_assert_eq!(parse_request(&shown).unwrap(), reqs);
            }
        }

        /// Any text is answered, never a panic; what is accepted asks for
        /// positive counts of well-formed names.
        #[test]
        fn any_text_is_answered(s in "\\PC{0,40}") {
            if let Ok(reqs) = parse_request(&s) {
                for r in reqs {
                    prop_assert!(r.count > 0 && !r.name.is_empty());
                }
            }
        }

        /// A request rendered from its parts parses back to them.
        #[test]
        fn rendered_requests_round_trip(
            name in "[a-z][a-z0-9_]{0,7}",
            ty in proptest::option::of("[a-z][a-z0-9.]{0,7}"),
            count in 1u64..100_000,
        ) {
            // `gres:` is the prefix Slurm writes, not a name.
            prop_assume!(name != "gres");
            let text = match &ty {
                Some(t) => format!("{name}:{t}:{count}"),
                None => format!("{name}:{count}"),
            };
            prop_assert_eq!(
                parse_request(&text).unwrap(),
                vec![GresRequest { name, gres_type: ty, count }]
            );
        }
    }
}
