//! Generic resources: the `Gres=` specs of node lines and `gres.conf`.
//!
//! slurm.conf says how many of each GRES a node has (`Gres=gpu:a100:4`);
//! gres.conf says which device files, cores and links back them, or asks
//! slurmd to detect them (`AutoDetect=nvml`). The controller needs only the
//! first; slurmd needs both to bind devices into a job's cgroup.
//!
//! gres.conf lines either start with `NodeName=<hostlist>` (the line applies
//! to those nodes) or with `Name=` (every node). A line holding only
//! `AutoDetect=` sets detection for all nodes, or for the named ones.
//! `NodeName=DEFAULT` lines set attribute defaults for the lines after them,
//! as in slurm.conf.

use std::fmt;

use super::lexer::{self, IncludeSource, Line};
use super::plugins::word_enum;
use super::value::{parse_count, parse_id_list, Field};
use super::{ConfError, ConfWarning, Parsed, SourceLoc, WarningKind};

/// One entry of a node's `Gres=`: `name[:type][:count][(S:sockets)]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GresSpec {
    pub name: String,
    pub gres_type: Option<String>,
    pub count: u64,
    /// Sockets the GRES is bound to, from the `(S:0-1)` suffix.
    pub sockets: Option<Vec<u32>>,
}

impl GresSpec {
    pub const EXPECTED: &'static str =
        "a comma list of name[:type][:count] such as gpu:a100:4,shard:8";

    /// Parses a whole `Gres=` value. `(null)` and the empty string are the
    /// empty list, as Slurm prints and accepts them.
    pub fn parse_list(v: &str) -> Option<Vec<GresSpec>> {
        let v = v.trim();
        if v.is_empty() || v.eq_ignore_ascii_case("(null)") || v.eq_ignore_ascii_case("none") {
            return Some(Vec::new());
        }
        split_outside_parens(v)?
            .into_iter()
            .map(|item| GresSpec::parse(item.trim()))
            .collect()
    }

    pub fn parse(item: &str) -> Option<GresSpec> {
        let (body, sockets) = match item.find('(') {
            Some(open) => {
                let inner = item[open..].strip_prefix('(')?.strip_suffix(')')?;
                let (tag, list) = inner.split_once(':')?;
                if !tag.eq_ignore_ascii_case("S") {
                    return None;
                }
                (&item[..open], Some(parse_id_list(list)?))
            }
            None => (item, None),
        };
        let parts: Vec<&str> = body.split(':').collect();
        let valid_word = |w: &str| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        };
        let (name, gres_type, count) = match parts.as_slice() {
            [name] => (*name, None, 1),
            [name, second] => match parse_count(second) {
                Some(c) if second.starts_with(|c: char| c.is_ascii_digit()) => (*name, None, c),
                _ => (*name, Some(*second), 1),
            },
            [name, ty, count] => (*name, Some(*ty), parse_count(count)?),
            _ => return None,
        };
        if !valid_word(name) || gres_type.is_some_and(|t| !valid_word(t)) {
            return None;
        }
        Some(GresSpec {
            name: name.to_string(),
            gres_type: gres_type.map(str::to_string),
            count,
            sockets,
        })
    }
}

impl fmt::Display for GresSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some(t) = &self.gres_type {
            write!(f, ":{t}")?;
        }
        write!(f, ":{}", self.count)?;
        if let Some(s) = &self.sockets {
            let list: Vec<String> = s.iter().map(u32::to_string).collect();
            write!(f, "(S:{})", list.join(","))?;
        }
        Ok(())
    }
}

/// Splits at commas that are not inside parentheses; None on unbalanced ones.
fn split_outside_parens(v: &str) -> Option<Vec<&str>> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in v.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.checked_sub(1)?,
            ',' if depth == 0 => {
                out.push(&v[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return None;
    }
    out.push(&v[start..]);
    Some(out.into_iter().filter(|s| !s.trim().is_empty()).collect())
}

word_enum! {
    /// gres.conf AutoDetect: which library slurmd asks for devices.
    GresAutoDetect, expected "nvml, nvidia, rsmi, oneapi, nrt or off" {
        Nvml => "nvml",
        Nvidia => "nvidia",
        Rsmi => "rsmi",
        OneApi => "oneapi",
        Nrt => "nrt",
        Off => "off",
    }
}

/// gres.conf Flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GresFlags {
    pub count_only: bool,
    pub explicit: bool,
    pub one_sharing: bool,
    pub nvidia_gpu_env: bool,
    pub amd_gpu_env: bool,
    pub intel_gpu_env: bool,
    pub opencl_env: bool,
    pub no_gpu_env: bool,
}

impl GresFlags {
    pub const EXPECTED: &'static str = "a comma list of CountOnly, explicit, one_sharing, \
        nvidia_gpu_env, amd_gpu_env, intel_gpu_env, opencl_env, no_gpu_env";

    pub fn parse(v: &str) -> Option<Self> {
        let mut f = GresFlags::default();
        for w in v.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match w.to_ascii_lowercase().as_str() {
                "countonly" => f.count_only = true,
                "explicit" => f.explicit = true,
                "one_sharing" => f.one_sharing = true,
                "nvidia_gpu_env" => f.nvidia_gpu_env = true,
                "amd_gpu_env" => f.amd_gpu_env = true,
                "intel_gpu_env" => f.intel_gpu_env = true,
                "opencl_env" => f.opencl_env = true,
                "no_gpu_env" => f.no_gpu_env = true,
                _ => return None,
            }
        }
        Some(f)
    }
}

/// One `Name=` line of gres.conf.
#[derive(Debug, Clone, PartialEq)]
pub struct GresRecord {
    pub loc: SourceLoc,
    /// The nodes the line applies to; None: every node.
    pub nodes: Option<Vec<String>>,
    pub name: String,
    pub gres_type: Option<String>,
    /// Device files, expanded (`/dev/nvidia[0-1]` gives two).
    pub files: Vec<String>,
    /// Cores close to the device(s); None: any core.
    pub cores: Option<Vec<u32>>,
    /// Count= if given, else the number of files, else 1.
    pub count: u64,
    pub links: Option<Vec<i32>>,
    pub flags: GresFlags,
}

impl GresRecord {
    pub fn applies_to(&self, node: &str) -> bool {
        self.nodes
            .as_ref()
            .is_none_or(|nodes| nodes.iter().any(|n| n == node))
    }
}

/// AutoDetect given for some nodes only.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeAutoDetect {
    pub loc: SourceLoc,
    pub nodes: Vec<String>,
    pub autodetect: GresAutoDetect,
}

/// The whole of gres.conf.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GresConf {
    /// AutoDetect for every node (a line without NodeName); None: not set.
    pub autodetect: Option<GresAutoDetect>,
    pub node_autodetect: Vec<NodeAutoDetect>,
    pub records: Vec<GresRecord>,
}

const KNOWN_KEYS: &[&str] = &[
    "AutoDetect",
    "Count",
    "Cores",
    "CPUs",
    "File",
    "Files",
    "Flags",
    "Links",
    "MultipleFiles",
    "Name",
    "NodeName",
    "Type",
];

/// Attributes that a `NodeName=DEFAULT` line may preset.
#[derive(Debug, Clone, Default)]
struct Defaults {
    values: Vec<(&'static str, String, SourceLoc)>,
}

impl GresConf {
    /// Parses text that must not use `Include`.
    pub fn parse(text: &str, origin: &str) -> Result<Parsed<GresConf>, ConfError> {
        Self::from_lines(lexer::lex(text, origin)?)
    }

    /// Parses text, resolving `Include` through `source`.
    pub fn parse_with(
        text: &str,
        origin: &str,
        source: &mut dyn IncludeSource,
    ) -> Result<Parsed<GresConf>, ConfError> {
        Self::from_lines(lexer::lex_with(text, origin, source)?)
    }

    /// Reads gres.conf (and its includes) from the filesystem.
    pub fn load(path: &str) -> Result<Parsed<GresConf>, ConfError> {
        Self::from_lines(lexer::load_with(path, &mut lexer::FsIncludes)?)
    }

    /// Records that apply to one node, in file order.
    pub fn for_node<'a>(&'a self, node: &'a str) -> impl Iterator<Item = &'a GresRecord> + 'a {
        self.records.iter().filter(move |r| r.applies_to(node))
    }

    /// The AutoDetect in force on one node (a node-specific line wins).
    pub fn autodetect_for(&self, node: &str) -> Option<GresAutoDetect> {
        self.node_autodetect
            .iter()
            .rev()
            .find(|a| a.nodes.iter().any(|n| n == node))
            .map(|a| a.autodetect)
            .or(self.autodetect)
    }

    fn from_lines(lines: Vec<Line>) -> Result<Parsed<GresConf>, ConfError> {
        let mut conf = GresConf::default();
        let mut warnings = Vec::new();
        let mut defaults = Defaults::default();
        for line in lines {
            conf.apply_line(&line, &mut defaults, &mut warnings)?;
        }
        Ok(Parsed { conf, warnings })
    }

    fn apply_line(
        &mut self,
        line: &Line,
        defaults: &mut Defaults,
        warnings: &mut Vec<ConfWarning>,
    ) -> Result<(), ConfError> {
        // Canonical key -> value, last one wins within the line.
        let mut attrs: Vec<(&'static str, &str)> = Vec::new();
        for pair in &line.pairs {
            let Some(key) = KNOWN_KEYS
                .iter()
                .copied()
                .find(|k| k.eq_ignore_ascii_case(&pair.key))
            else {
                warnings.push(ConfWarning {
                    loc: line.loc.clone(),
                    kind: WarningKind::UnknownKey {
                        key: pair.key.clone(),
                    },
                });
                continue;
            };
            let key = match key {
                "CPUs" => "Cores",
                "Files" => "File",
                k => k,
            };
            attrs.retain(|(k, _)| *k != key);
            attrs.push((key, pair.value.as_str()));
        }
        let get = |k: &str| attrs.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
        let loc = &line.loc;

        let node_value = get("NodeName");
        if node_value.is_some_and(|v| v.trim().eq_ignore_ascii_case("DEFAULT")) {
            for (k, v) in &attrs {
                if *k != "NodeName" {
                    defaults.values.retain(|(dk, _, _)| dk != k);
                    defaults.values.push((k, v.to_string(), loc.clone()));
                }
            }
            return Ok(());
        }
        let nodes = match node_value {
            Some(v) => Some(Field::new("NodeName", v, loc).hostlist()?),
            None => None,
        };
        if let Some(v) = get("AutoDetect") {
            let ad = Field::new("AutoDetect", v, loc)
                .with(GresAutoDetect::EXPECTED, GresAutoDetect::parse)?;
            match &nodes {
                Some(n) => self.node_autodetect.push(NodeAutoDetect {
                    loc: loc.clone(),
                    nodes: n.clone(),
                    autodetect: ad,
                }),
                None => self.autodetect = Some(ad),
            }
        }
        let Some(name_value) = get("Name") else {
            let only_scoping = attrs
                .iter()
                .all(|(k, _)| matches!(*k, "NodeName" | "AutoDetect"));
            if only_scoping {
                return Ok(());
            }
            return Err(ConfError::MissingName {
                loc: loc.clone(),
                line_key: "Name",
            });
        };
        let name = Field::new("Name", name_value, loc).name()?;

        // Line values first, then the DEFAULT values for keys the line lacks.
        let mut merged: Vec<(&'static str, String, SourceLoc)> = attrs
            .iter()
            .map(|(k, v)| (*k, v.to_string(), loc.clone()))
            .collect();
        for (k, v, l) in &defaults.values {
            if !merged.iter().any(|(mk, _, _)| mk == k) {
                merged.push((k, v.clone(), l.clone()));
            }
        }

        let mut record = GresRecord {
            loc: loc.clone(),
            nodes,
            name,
            gres_type: None,
            files: Vec::new(),
            cores: None,
            count: 1,
            links: None,
            flags: GresFlags::default(),
        };
        let mut count = None;
        for (key, value, l) in &merged {
            let f = Field::new(key, value, l);
            match *key {
                "Type" => record.gres_type = f.string(),
                "File" | "MultipleFiles" if f.string().is_some() => {
                    record.files.extend(f.hostlist()?);
                }
                "Cores" => record.cores = Some(f.id_list()?),
                "Count" => count = Some(f.with("a count such as 4 or 100K", parse_count)?),
                "Links" => {
                    record.links = Some(f.with("a comma list of integers such as -1,0,2", |v| {
                        v.split(',').map(|x| x.trim().parse::<i32>().ok()).collect()
                    })?)
                }
                "Flags" => record.flags = f.with(GresFlags::EXPECTED, GresFlags::parse)?,
                _ => {}
            }
        }
        let sharing = matches!(record.name.as_str(), "mps" | "shard");
        record.count = match count {
            Some(c) => {
                if !record.files.is_empty() && !sharing && c != record.files.len() as u64 {
                    return Err(ConfError::GresCountMismatch {
                        loc: loc.clone(),
                        name: record.name,
                        count: c,
                        files: record.files.len(),
                    });
                }
                c
            }
            None if !record.files.is_empty() => record.files.len() as u64,
            None => 1,
        };
        self.records.push(record);
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn spec(name: &str, ty: Option<&str>, count: u64) -> GresSpec {
        GresSpec {
            name: name.into(),
            gres_type: ty.map(Into::into),
            count,
            sockets: None,
        }
    }

    #[test]
    fn gres_spec_forms() {
        assert_eq!(
            GresSpec::parse_list("gpu:a100:4,shard:8").unwrap(),
            vec![spec("gpu", Some("a100"), 4), spec("shard", None, 8)]
        );
        assert_eq!(GresSpec::parse("gpu").unwrap(), spec("gpu", None, 1));
        assert_eq!(
            GresSpec::parse("gpu:tesla").unwrap(),
            spec("gpu", Some("tesla"), 1)
        );
        assert_eq!(
            GresSpec::parse("mps:100K").unwrap(),
            spec("mps", None, 102_400)
        );
        assert_eq!(
            GresSpec::parse("bandwidth:lustre:4G").unwrap(),
            spec("bandwidth", Some("lustre"), 4 << 30)
        );
        let s = GresSpec::parse_list("gpu:a100:2(S:0-1),gpu:v100:1(S:1)").unwrap();
        assert_eq!(s[0].sockets, Some(vec![0, 1]));
        assert_eq!(s[1].sockets, Some(vec![1]));
        assert_eq!(s[0].to_string(), "gpu:a100:2(S:0,1)");
        assert_eq!(GresSpec::parse_list("(null)").unwrap(), vec![]);
        assert_eq!(GresSpec::parse_list("").unwrap(), vec![]);
    }

    #[test]
    fn bad_gres_specs() {
        for bad in [
            "gpu:a:b:c",
            ":4",
            "gpu:a100:x",
            "gpu(S:0",
            "gpu(X:0)",
            "gpu:a100:4)",
            "gp u",
        ] {
            assert!(GresSpec::parse_list(bad).is_none(), "{bad}");
        }
    }

    const GRES: &str = "\
AutoDetect=off
# two GPUs per node, bound to sockets
NodeName=g[1-2] Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=0-7
NodeName=g[1-2] Name=shard Count=8
Name=mps Count=200 File=/dev/nvidia0
NodeName=g3 AutoDetect=nvml
";

    #[test]
    fn parses_records_and_scoping() {
        let p = GresConf::parse(GRES, "gres.conf").unwrap();
        assert!(p.warnings.is_empty());
        let c = p.conf;
        assert_eq!(c.autodetect, Some(GresAutoDetect::Off));
        assert_eq!(c.autodetect_for("g3"), Some(GresAutoDetect::Nvml));
        assert_eq!(c.autodetect_for("g1"), Some(GresAutoDetect::Off));
        assert_eq!(c.records.len(), 3);
        let gpu = &c.records[0];
        assert_eq!(gpu.name, "gpu");
        assert_eq!(gpu.gres_type.as_deref(), Some("a100"));
        assert_eq!(gpu.files, vec!["/dev/nvidia0", "/dev/nvidia1"]);
        assert_eq!(gpu.count, 2);
        assert_eq!(gpu.cores, Some((0..8).collect()));
        assert_eq!(gpu.loc.line, 3);
        assert_eq!(c.records[1].count, 8);
        assert_eq!(c.records[2].count, 200);
        assert_eq!(c.for_node("g1").count(), 3);
        assert_eq!(c.for_node("g9").count(), 1);
    }

    #[test]
    fn default_lines_preset_attributes() {
        let text = "NodeName=DEFAULT Type=h100 Flags=nvidia_gpu_env\n\
                    NodeName=n1 Name=gpu File=/dev/nvidia0\n\
                    NodeName=n2 Name=gpu Type=a10 File=/dev/nvidia0\n";
        let c = GresConf::parse(text, "g").unwrap().conf;
        assert_eq!(c.records[0].gres_type.as_deref(), Some("h100"));
        assert!(c.records[0].flags.nvidia_gpu_env);
        assert_eq!(c.records[1].gres_type.as_deref(), Some("a10"));
    }

    #[test]
    fn count_file_mismatch_is_an_error() {
        let err = GresConf::parse("Name=gpu File=/dev/nvidia[0-1] Count=3", "g").unwrap_err();
        assert!(matches!(
            err,
            ConfError::GresCountMismatch {
                count: 3,
                files: 2,
                ..
            }
        ));
    }

    #[test]
    fn errors_and_warnings() {
        let err = GresConf::parse("NodeName=n1 Type=a100", "g").unwrap_err();
        assert!(matches!(err, ConfError::MissingName { .. }));
        let err = GresConf::parse("AutoDetect=cuda", "g").unwrap_err();
        assert_eq!(
            err.to_string(),
            "g:1: invalid value \"cuda\" for AutoDetect: expected nvml, nvidia, rsmi, oneapi, nrt or off"
        );
        let err = GresConf::parse("Name=gpu Cores=a-b", "g").unwrap_err();
        assert!(matches!(err, ConfError::InvalidValue { ref key, .. } if key == "Cores"));
        let err = GresConf::parse("Name=gpu Flags=shiny", "g").unwrap_err();
        assert!(matches!(err, ConfError::InvalidValue { ref key, .. } if key == "Flags"));
        let p = GresConf::parse("Name=gpu Colour=red", "g").unwrap();
        assert_eq!(
            p.warnings[0].kind,
            WarningKind::UnknownKey {
                key: "Colour".into()
            }
        );
    }

    #[test]
    fn keys_are_case_insensitive() {
        let c = GresConf::parse("nodename=n1 NAME=gpu count=2 cpus=0-1", "g")
            .unwrap()
            .conf;
        assert_eq!(c.records[0].count, 2);
        assert_eq!(c.records[0].cores, Some(vec![0, 1]));
        assert_eq!(c.records[0].nodes, Some(vec!["n1".to_string()]));
    }
}
