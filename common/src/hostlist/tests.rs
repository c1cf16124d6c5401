//! Behaviour of the public hostlist API. Expected values marked "Slurm" were
//! observed with Slurm 22.05.8's `scontrol show hostnames|hostlist|hostlistsorted`.

use proptest::prelude::*;

use super::*;

fn ex(expr: &str) -> Vec<String> {
    match expand(expr) {
        Ok(v) => v,
        Err(e) => panic!("{expr:?}: {e}"),
    }
}

#[test]
fn expand_ranges_padding_and_order() {
    assert_eq!(
        ex("n[1-3,5],gpu[01-02],a,b"),
        ["n1", "n2", "n3", "n5", "gpu01", "gpu02", "a", "b"]
    );
    assert_eq!(
        ex("n[01-3],x[8-11],y[1,3-4],z"),
        ["n01", "n02", "n03", "x8", "x9", "x10", "x11", "y1", "y3", "y4", "z"]
    );
    // Width comes from the lower bound only (Slurm).
    assert_eq!(ex("n[1-010]").len(), 10);
    assert_eq!(ex("n[1-010]")[9], "n10");
    assert_eq!(ex("n[098-100]"), ["n098", "n099", "n100"]);
    // No sorting, no de-duplication.
    assert_eq!(ex("n[3,1-2],n1"), ["n3", "n1", "n2", "n1"]);
    // `N-` is a single number (Slurm).
    assert_eq!(ex("n[4-]"), ["n4"]);
    // An empty prefix is allowed.
    assert_eq!(ex("[1-3]"), ["1", "2", "3"]);
}

#[test]
fn expand_cartesian_product_in_slurm_order() {
    assert_eq!(
        ex("rack[1-2]-n[01-02]"),
        ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]
    );
    assert_eq!(ex("n[1-2][3-4]"), ["n13", "n14", "n23", "n24"]);
    assert_eq!(ex("a[1-2]b[3-4]"), ["a1b3", "a1b4", "a2b3", "a2b4"]);
    // With three groups the middle one varies slowest (Slurm).
    assert_eq!(ex("[5-6]x[1-2]-[7]"), ["5x1-7", "6x1-7", "5x2-7", "6x2-7"]);
    assert_eq!(
        ex("x[1,3]y[08-09]z[1-2]"),
        ["x1y08z1", "x1y08z2", "x3y08z1", "x3y08z2", "x1y09z1", "x1y09z2", "x3y09z1", "x3y09z2"]
    );
}

#[test]
fn expand_separators() {
    assert_eq!(ex("n1 n2\tn3\nn4,,n5,"), ["n1", "n2", "n3", "n4", "n5"]);
    assert_eq!(ex(",n1"), ["n1"]);
    assert!(ex("").is_empty());
    assert!(ex(" , ").is_empty());
    // Carriage return and semicolon are part of a name (Slurm).
    assert_eq!(ex("n1\rn2"), ["n1\rn2"]);
    assert_eq!(ex("n1;n2"), ["n1;n2"]);
    assert_eq!(ex("é[1-2]"), ["é1", "é2"]);
}

#[test]
fn expand_keeps_names_verbatim() {
    assert_eq!(ex("n99999999999999999999"), ["n99999999999999999999"]);
    assert_eq!(ex("n007,n1b"), ["n007", "n1b"]);
    // The top of the 64-bit range must not wrap (Slurm 22.05 crashes here).
    assert_eq!(
        ex("n[18446744073709551614-18446744073709551615]"),
        ["n18446744073709551614", "n18446744073709551615"]
    );
}

#[test]
fn invalid_ranges() {
    for (expr, range) in [
        ("n[5-1]", "5-1"),
        ("n[]", ""),
        ("n[a-b]", "a-b"),
        ("n[-1]", "-1"),
        ("n[1--3]", "1--3"),
        ("n[1,2,,3]", ""),
        ("n[1-2,]", ""),
        ("n[1-2x]", "1-2x"),
        ("n[ 1-3]", " 1-3"),
        ("n[+1-3]", "+1-3"),
        ("n[99999999999999999999]", "99999999999999999999"),
        // Groups are checked from the right, as Slurm does.
        ("a[x]b[y]c[1]", "y"),
        ("n[a]-[1-2]", "a"),
        ("ok[1],n[5-1]-[1-2]", "5-1"),
    ] {
        assert_eq!(
            expand(expr),
            Err(HostlistError::InvalidRange {
                expr: expr.to_owned(),
                range: range.to_owned()
            }),
            "{expr:?}"
        );
    }
}

#[test]
fn range_limits() {
    assert_eq!(count("n[0-65535]"), Ok(65_536));
    assert_eq!(
        count("n[1-2]-[0-65536]"),
        Err(HostlistError::RangeTooLarge {
            expr: "n[1-2]-[0-65536]".to_owned(),
            range: "0-65536".to_owned(),
            limit: MAX_RANGE_HOSTS
        })
    );
    assert!(matches!(
        expand("n[1-99999999999999999999]"),
        Err(HostlistError::RangeTooLarge { .. })
    ));
    let huge = "n[0-65535]-[0-65535]";
    assert_eq!(
        count(huge),
        Err(HostlistError::TooManyHosts {
            expr: huge.to_owned(),
            limit: MAX_HOSTS
        })
    );
    assert!(matches!(
        expand(huge),
        Err(HostlistError::TooManyHosts { .. })
    ));
    // Many small groups multiply too; the count saturates instead of wrapping.
    let many = "n".to_owned() + &"[0-65535]".repeat(40);
    assert!(matches!(
        count(&many),
        Err(HostlistError::TooManyHosts { .. })
    ));
    // Exactly at the limit is fine, one more is not.
    let at_limit = "a[0-65535],b[0-65535],c[0-65535],d[0-65535],e[0-65535],f[0-65535],\
                    g[0-65535],h[0-65535],i[0-65535],j[0-65535],k[0-65535],l[0-65535],\
                    m[0-65535],n[0-65535],o[0-65535],p[0-16959]";
    assert_eq!(count(at_limit), Ok(MAX_HOSTS));
    assert!(matches!(
        count(&format!("{at_limit},q")),
        Err(HostlistError::TooManyHosts { .. })
    ));
    // Long zero padding cannot blow up memory either.
    let wide = format!("n[{}1-65535]-[1-10]", "0".repeat(1000));
    assert!(matches!(expand(&wide), Err(HostlistError::TooLong { .. })));
}

#[test]
fn structural_errors() {
    for expr in [
        "n[1-3",
        "n[1-3,5",
        "n1-2]",
        "n[[1-2]]",
        "n[1-2]]",
        "n[1-2x[3-4]",
        "a,]b",
    ] {
        assert!(
            matches!(expand(expr), Err(HostlistError::UnbalancedBrackets { .. })),
            "{expr:?}"
        );
    }
    for expr in ["a-[1-2]b", "n[1-3]x", "n[1-3],gpu[01-02],a-[1-2]b"] {
        assert!(
            matches!(expand(expr), Err(HostlistError::TextAfterBracket { .. })),
            "{expr:?}"
        );
    }
    let err = expand("a,n[1-3").unwrap_err();
    assert_eq!(err.expr(), "a,n[1-3");
    assert_eq!(
        err.to_string(),
        "unbalanced brackets in \"n[1-3\" of hostlist \"a,n[1-3\""
    );
}

#[test]
fn count_agrees_with_expand() {
    for expr in [
        "",
        "a",
        "n[1-3,5],gpu[01-02]",
        "r[1-3]-n[1-4],x",
        "n[1-3],n[1-3]",
    ] {
        assert_eq!(count(expr), Ok(ex(expr).len()), "{expr:?}");
    }
}

#[test]
fn compress_like_scontrol_show_hostlist() {
    // Slurm.
    for (names, expected) in [
        ("n1,n2,n3,n5", "n[1-3,5]"),
        ("n1,n01", "n[1,01]"),
        ("n01,n1", "n[01,1]"),
        ("n1,n2,n01,n02", "n[1-2,01-02]"),
        ("n9,n10", "n[9-10]"),
        ("n09,n10", "n[09-10]"),
        ("n99,n100", "n[99-100]"),
        ("n9,n010", "n[9,010]"),
        ("n05,n06,n07,n08,n09,n10", "n[05-10]"),
        ("n1,n,n2", "n1,n,n2"),
        ("a,b,a", "a,b,a"),
        ("n1,m1,n2", "n1,m1,n2"),
        ("rack1-n1,rack1-n2,rack2-n1", "rack1-n[1-2],rack2-n1"),
        ("n1b,n2b", "n1b,n2b"),
        ("n0,n1", "n[0-1]"),
        ("n00,n01,n02", "n[00-02]"),
        ("x1y2,x1y3", "x1y[2-3]"),
        ("n5,n4", "n[5,4]"),
        ("1,2,3", "[1-3]"),
        ("n-1,n-2", "n-[1-2]"),
        ("", ""),
    ] {
        let list: Vec<&str> = names.split(',').filter(|s| !s.is_empty()).collect();
        assert_eq!(compress(&list), expected, "{names:?}");
    }
    // Slurm: expressions re-spelled.
    for (expr, expected) in [
        ("n[1-3],n[2-4]", "n[1-3,2-4]"),
        ("n[1-3],n[4-6]", "n[1-6]"),
        ("n[05-09],n10", "n[05-10]"),
        ("n[001-1000]", "n[001-1000]"),
        ("n[8-10]", "n[8-10]"),
        ("n1 n2", "n[1-2]"),
        ("n[1-2]-[3-4]", "n1-[3-4],n2-[3-4]"),
    ] {
        assert_eq!(compress_expr(expr).as_deref(), Ok(expected), "{expr:?}");
    }
    assert_eq!(compress(ex("n[1-3],n[2-4]")), "n[1-3,2-4]");
    assert_eq!(compress(ex("n[1-3],n[4-6]")), "n[1-6]");
    assert_eq!(compress(ex("n[1-2][3-4]")), "n[13-14,23-24]");
    assert_eq!(
        compress_expr("n[1-2][3-4]").as_deref(),
        Ok("n1[3-4],n2[3-4]")
    );
    assert_eq!(compress(ex("n[001-1000]")), "n[001-1000]");
    assert_eq!(compress(ex("n[8-10]")), "n[8-10]");
}

#[test]
fn compress_sorted_like_scontrol_show_hostlistsorted() {
    // Slurm.
    for (expr, expected) in [
        ("n3,n1,n2,n10,gpu01,gpu02", "gpu[01-02],n[1-3,10]"),
        ("n3,n1,n1,n2", "n[1,1-3]"),
        ("n[1-10],n[5-6]", "n[1-5,5-6,6-10]"),
        ("n[1-5],n[3-7]", "n[1-3,3-4,4-5,5-7]"),
        ("n1,n1,n2,n2", "n[1,1-2,2]"),
        ("n[1-5],n[1-5],n[1-5]", "n[1,1,1-2,2,2-3,3,3-4,4,4-5,5,5]"),
        ("n2,n1,n01,n02", "n[1-2,01-02]"),
        ("n1,n01,n2", "n[1-2,01]"),
        ("n9,n08,n10", "n[9,08,10]"),
        ("n10,n9,n010", "n[9-10,010]"),
        ("n5,n05,n4", "n[4-5,05]"),
        ("rack10-n1,rack2-n1,rack1-n1", "rack1-n1,rack2-n1,rack10-n1"),
        ("b1,A1,a1,B1", "A1,B1,a1,b1"),
        ("n,n1,n", "n,n,n1"),
        ("z,a1,a", "a,a1,z"),
        ("x10y,x2y,x1y", "x1y,x2y,x10y"),
        ("a01b,a1b", "a01b,a1b"),
        ("n[1-2][3-4],n1[1-2]", "n1[1-4],n2[3-4]"),
        ("n[1-100],n50", "n[1-50,50-100]"),
        ("n[1-3],m[1-3],n[4-5]", "m[1-3],n[1-5]"),
        ("a-1,a1,a_1,a.1", "a1,a-1,a.1,a_1"),
        ("é1,a1,z1,~1,A1,-1,_1", "é1,-1,A1,_1,a1,z1,~1"),
        (
            "r001n1,r01n1,r1n1,r10n1,r010n1,r2n1,r0n1,r00n1",
            "r0n1,r00n1,r001n1,r01n1,r010n1,r1n1,r2n1,r10n1",
        ),
    ] {
        assert_eq!(
            compress_expr_sorted(expr).as_deref(),
            Ok(expected),
            "{expr:?}"
        );
        if !expr.contains("][") {
            assert_eq!(compress_sorted(ex(expr)), expected, "{expr:?}");
        }
    }
}

#[test]
fn compress_unique_drops_duplicates() {
    assert_eq!(compress_unique(ex("n[1-5],n[3-7],n1")), "n[1-7]");
    assert_eq!(compress_unique(ex("n1,n01,n1")), "n[1,01]");
    assert_eq!(compress_unique(["b", "a", "b"]), "a,b");
}

#[test]
fn hostlist_type() {
    let hl = HostList::parse("n[3,1-2],gpu01").unwrap();
    assert_eq!(hl.len(), 4);
    assert!(!hl.is_empty());
    assert!(hl.contains("gpu01"));
    assert!(!hl.contains("gpu1"));
    assert_eq!(hl.to_string(), "n[3,1-2],gpu01");
    assert_eq!(hl.to_sorted_string(), "gpu01,n[1-3]");
    assert_eq!(
        hl.iter().map(String::as_str).collect::<Vec<_>>(),
        ["n3", "n1", "n2", "gpu01"]
    );
    let mut sorted = hl.clone();
    sorted.push("n1");
    sorted.uniq();
    assert_eq!(sorted.as_slice(), ["gpu01", "n1", "n2", "n3"]);
    assert_eq!(
        "n[1-2]".parse::<HostList>(),
        Ok(HostList::from_names(["n1", "n2"]))
    );
    assert!("n[2-1]".parse::<HostList>().is_err());
    let collected: HostList = ["a", "b"].into_iter().collect();
    assert_eq!(collected.into_vec(), ["a", "b"]);
    assert_eq!(HostList::new().to_string(), "");
}

/// A host name as sites write them: a prefix, an optional zero-padded
/// number, and sometimes a non-numeric tail (`n01`, `gpu7`, `login`, `r1b`).
fn host_name() -> impl Strategy<Value = String> {
    (
        "[a-z][a-z0-9-]{0,3}",
        prop::option::of((0u64..200, 0usize..4)),
        prop::option::of("[a-z][a-z-]{0,2}"),
    )
        .prop_map(|(prefix, number, tail)| {
            let mut s = prefix;
            if let Some((n, width)) = number {
                s.push_str(&format!("{n:0width$}"));
            }
            if let Some(t) = tail {
                s.push_str(&t);
            }
            s
        })
}

/// Names sharing a few prefixes with nearby numbers, so runs actually form.
fn clustered_names() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        (
            prop::sample::select(vec!["n", "gpu", "rack1-n", "x", ""]),
            0u64..30,
            0usize..4,
        )
            .prop_map(|(p, n, w)| format!("{p}{n:0w$}")),
        0..40,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn expand_inverts_compress(names in prop::collection::vec(host_name(), 0..30)) {
        prop_assert_eq!(expand(&compress(&names)), Ok(names));
    }

    #[test]
    fn expand_inverts_compress_clustered(names in clustered_names()) {
        prop_assert_eq!(expand(&compress(&names)), Ok(names.clone()));
        let sorted = compress_sorted(&names);
        let mut back = expand(&sorted).unwrap_or_default();
        let mut orig = names.clone();
        back.sort();
        orig.sort();
        prop_assert_eq!(back, orig, "sorted form {} lost or invented names", sorted);
    }

    #[test]
    fn compress_sorted_is_stable(names in clustered_names()) {
        let once = compress_sorted(&names);
        let expanded = expand(&once).unwrap_or_default();
        prop_assert_eq!(&compress_sorted(&expanded), &once);
        prop_assert_eq!(compress(&expanded), once);
        let unique = compress_unique(&names);
        prop_assert_eq!(compress_unique(expand(&unique).unwrap_or_default()), unique);
    }

    #[test]
    fn compress_expr_keeps_the_hosts(
        groups in prop::collection::vec(
            (prop::sample::select(vec!["n", "r1-", "x"]), 0u64..20, 0u64..5, 0usize..3),
            0..6,
        ),
        tail in prop::option::of((0u64..3, 0u64..3)),
    ) {
        // Build an expression such as `n[3-5],r1-[07-08]-[0-2]`.
        let expr: Vec<String> = groups
            .iter()
            .map(|(p, lo, len, w)| {
                let mut e = format!("{p}[{lo:0w$}-{}]", lo + len);
                if let Some((a, b)) = tail {
                    e = format!("{p}[{lo:0w$}-{}]-[{a}-{}]", lo + len, a + b);
                }
                e
            })
            .collect();
        let expr = expr.join(",");
        let names = expand(&expr).unwrap_or_default();
        let spelled = compress_expr(&expr).unwrap_or_default();
        prop_assert_eq!(expand(&spelled), Ok(names.clone()), "{} -> {}", expr, spelled);
        prop_assert_eq!(compress_expr(&spelled), Ok(spelled.clone()));
        let sorted = compress_expr_sorted(&expr).unwrap_or_default();
        let mut back = expand(&sorted).unwrap_or_default();
        let mut orig = names;
        back.sort();
        orig.sort();
        prop_assert_eq!(back, orig);
        // Sorting again is not required to be a no-op: Slurm's merge of runs
        // with mixed zero-padding widths (`9-10` beside `00`) leaves such runs
        // in merge order, and hostlistsorted reproduces that order.
    }

    #[test]
    fn count_matches_expand(names in clustered_names()) {
        let expr = compress(&names);
        prop_assert_eq!(count(&expr), Ok(names.len()));
    }

    #[test]
    fn never_panics(expr in "[a-c0-9\\[\\],\\- é]{0,24}") {
        let _ = expand(&expr);
        let _ = count(&expr);
        if let Ok(names) = expand(&expr) {
            prop_assert_eq!(count(&expr), Ok(names.len()));
            let _ = compress(&names);
            let _ = compress_sorted(&names);
        }
    }
}
