//! `scontrol update NodeName=` for what is not a state: AvailableFeatures
//! (Features=), ActiveFeatures, Weight and Comment.
//!
//! A node keeps slurm.conf's Features= and Weight= in [`NodeRec`] as read;
//! an update is laid over them ([`NodeAttrs`], merged key by key), so what
//! is in force is always slurm.conf's line plus the updates. As in Slurm:
//! - without a node features plugin ActiveFeatures follows
//!   AvailableFeatures, unless it is given as well, and must be a subset
//!   of it;
//! - updates are journaled and kept in snapshots, so they survive a restart
//!   with state (Slurm's `-R`) and a failover;
//! - `scontrol reconfigure` puts features and weights back as the new
//!   slurm.conf has them (journaled too, so a replay agrees); a node's
//!   Comment is not part of slurm.conf and stays.

use slurm_proto::v1;

use super::codec::{Reader, Writer};
use super::event::DecodeError;
use super::node::NodeRec;
use super::Controller;

/// What updates set on one node; `None`: as slurm.conf has it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeAttrs {
    pub features: Option<Vec<String>>,
    pub active_features: Option<Vec<String>>,
    pub weight: Option<u32>,
    pub comment: Option<String>,
}

/// Why an update of a node's attributes was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttrError {
    #[error("ActiveFeatures of node {node} ({active}) are not a subset of its AvailableFeatures ({available})")]
    NotSubset {
        node: String,
        active: String,
        available: String,
    },
}

/// A comma-separated feature list; empty: none. Taken as written, as
/// Slurm 22.05 takes it (`a,,b` and `a,a` are shown so): a name no
/// `--constraint` can spell simply matches no job.
pub fn parse_features(text: &str) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    text.split(',').map(str::to_owned).collect()
}

impl NodeAttrs {
    /// The attributes of an update request, checked; `None` when it sets
    /// none of them.
    pub fn from_request(req: &v1::UpdateNodeRequest) -> Option<NodeAttrs> {
        let attrs = NodeAttrs {
            features: req.features.as_deref().map(parse_features),
            active_features: req.active_features.as_deref().map(parse_features),
            weight: req.weight,
            comment: req.comment.clone(),
        };
        (attrs != NodeAttrs::default()).then_some(attrs)
    }

    /// `self` with what `newer` sets laid over it. New AvailableFeatures
    /// without ActiveFeatures make the active ones follow them again.
    pub fn merged(&self, newer: &NodeAttrs) -> NodeAttrs {
        let active_features = match (&newer.active_features, &newer.features) {
            (Some(a), _) => Some(a.clone()),
            (None, Some(_)) => None,
            (None, None) => self.active_features.clone(),
        };
        NodeAttrs {
            features: newer.features.clone().or_else(|| self.features.clone()),
            active_features,
            weight: newer.weight.or(self.weight),
            comment: newer.comment.clone().or_else(|| self.comment.clone()),
        }
    }

    /// What `scontrol reconfigure` keeps: the comment.
    pub fn after_reconfigure(&self) -> Option<NodeAttrs> {
        self.comment.as_ref().map(|c| NodeAttrs {
            comment: Some(c.clone()),
            ..NodeAttrs::default()
        })
    }

    /// Whether it changes something slurm.conf says.
    pub fn overrides_config(&self) -> bool {
        self.features.is_some() || self.active_features.is_some() || self.weight.is_some()
    }

    pub(super) fn write(&self, w: &mut Writer<'_>) {
        let NodeAttrs {
            features,
            active_features,
            weight,
            comment,
        } = self;
        for list in [features, active_features] {
            match list {
                Some(l) => {
                    w.bool(true);
                    w.len(l.len());
                    for f in l {
                        w.str(f);
                    }
                }
                None => w.bool(false),
            }
        }
        w.opt_u32(*weight);
        match comment {
            Some(c) => {
                w.bool(true);
                w.str(c);
            }
            None => w.bool(false),
        }
    }

    pub(super) fn read(r: &mut Reader<'_>) -> Result<NodeAttrs, DecodeError> {
        let mut lists = [None, None];
        for list in &mut lists {
            if r.bool("feature list present")? {
                let n = r.u32("feature count")?;
                let mut l = Vec::new();
                for _ in 0..n {
                    l.push(r.string("feature")?);
                }
                *list = Some(l);
            }
        }
        let [features, active_features] = lists;
        Ok(NodeAttrs {
            features,
            active_features,
            weight: r.opt_u32("weight")?,
            comment: if r.bool("comment present")? {
                Some(r.string("comment")?)
            } else {
                None
            },
        })
    }
}

impl NodeRec {
    /// AvailableFeatures in force.
    pub fn available_features(&self) -> &[String] {
        match self.attrs.as_ref().and_then(|a| a.features.as_ref()) {
            Some(f) => f,
            None => &self.features,
        }
    }

    /// ActiveFeatures in force: what `--constraint` is matched against.
    pub fn active_features(&self) -> &[String] {
        match self.attrs.as_ref().and_then(|a| a.active_features.as_ref()) {
            Some(f) => f,
            None => self.available_features(),
        }
    }

    /// Whether an update set ActiveFeatures to nothing.
    pub fn active_features_cleared(&self) -> bool {
        self.attrs
            .as_ref()
            .and_then(|a| a.active_features.as_ref())
            .is_some_and(|f| f.is_empty())
    }

    /// Weight in force.
    pub fn weight_now(&self) -> u32 {
        self.attrs
            .as_ref()
            .and_then(|a| a.weight)
            .unwrap_or(self.weight)
    }

    pub fn comment(&self) -> Option<&str> {
        self.attrs.as_ref().and_then(|a| a.comment.as_deref())
    }

    /// The node's attributes with `update` laid over them.
    fn merged_attrs(&self, update: &NodeAttrs) -> NodeAttrs {
        self.attrs
            .as_deref()
            .cloned()
            .unwrap_or_default()
            .merged(update)
    }

    /// What the node's attributes would be with `update` laid over them,
    /// checked as Slurm checks them.
    /// New AvailableFeatures alone must still hold the ActiveFeatures in
    /// force (which then follow them), as Slurm 22.05 checks.
    pub(super) fn attrs_with(&self, update: &NodeAttrs) -> Result<NodeAttrs, AttrError> {
        let merged = self.merged_attrs(update);
        let available = merged.features.as_deref().unwrap_or(&self.features);
        let active = match (&update.features, &merged.active_features) {
            (Some(_), None) => Some(self.active_features()),
            (_, active) => active.as_deref(),
        };
        if let Some(active) = active {
            if active.iter().any(|f| !available.contains(f)) {
                let show = |l: &[String]| {
                    if l.is_empty() {
                        "(null)".to_owned()
                    } else {
                        l.join(",")
                    }
                };
                return Err(AttrError::NotSubset {
                    node: self.name.clone(),
                    active: show(active),
                    available: show(available),
                });
            }
        }
        Ok(merged)
    }
}

impl Controller {
    /// Lays `attrs` over node `i` (checked when it was handled).
    pub(super) fn apply_node_attrs(&mut self, i: usize, attrs: &NodeAttrs) {
        let node = &mut self.nodes[i];
        let merged = node.merged_attrs(attrs);
        node.attrs = (merged != NodeAttrs::default()).then(|| Box::new(merged));
        self.sched_dirty = true;
    }

    /// After `scontrol reconfigure`: features and weights as slurm.conf
    /// has them again.
    pub(super) fn reset_node_attrs(&mut self) {
        for n in &mut self.nodes {
            n.attrs = n
                .attrs
                .as_ref()
                .and_then(|a| a.after_reconfigure())
                .map(Box::new);
        }
        self.sched_dirty = true;
    }

    pub(super) fn any_node_overrides_config(&self) -> bool {
        self.nodes
            .iter()
            .any(|n| n.attrs.as_ref().is_some_and(|a| a.overrides_config()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(features: Option<&str>, active: Option<&str>, weight: Option<u32>) -> NodeAttrs {
        let list = parse_features;
        NodeAttrs {
            features: features.map(list),
            active_features: active.map(list),
            weight,
            comment: None,
        }
    }

    #[test]
    fn feature_lists_are_taken_as_written() {
        assert_eq!(parse_features("a,b,a"), vec!["a", "b", "a"]);
        assert_eq!(parse_features("a,,b"), vec!["a", "", "b"]);
        assert_eq!(parse_features("a&b"), vec!["a&b"]);
        assert!(parse_features("").is_empty());
    }

    #[test]
    fn merging_keeps_what_the_newer_update_leaves_out() {
        let old = attrs(Some("a,b"), Some("a"), Some(5));
        let m = old.merged(&attrs(None, None, Some(7)));
        assert_eq!(m, attrs(Some("a,b"), Some("a"), Some(7)));
        // New available features: the active ones follow them again.
        let m = old.merged(&attrs(Some("c"), None, None));
        assert_eq!(m, attrs(Some("c"), None, Some(5)));
        let m = old.merged(&attrs(Some("c,d"), Some("d"), None));
        assert_eq!(m, attrs(Some("c,d"), Some("d"), Some(5)));
    }

    #[test]
    fn reconfigure_keeps_only_the_comment() {
        let mut a = attrs(Some("a"), None, Some(3));
        assert!(a.overrides_config());
        assert_eq!(a.after_reconfigure(), None);
        a.comment = Some("rack 4".into());
        let kept = a.after_reconfigure().unwrap();
        assert!(!kept.overrides_config());
        assert_eq!(kept.comment.as_deref(), Some("rack 4"));
    }

    #[test]
    fn attributes_round_trip_through_the_codec() {
        let mut a = attrs(Some("a,b"), Some(""), Some(9));
        a.comment = Some("x".into());
        for v in [a, NodeAttrs::default()] {
            let mut buf = Vec::new();
            v.write(&mut Writer(&mut buf));
            let mut r = Reader::new(&buf);
            assert_eq!(NodeAttrs::read(&mut r).unwrap(), v);
            r.done().unwrap();
        }
    }
}
