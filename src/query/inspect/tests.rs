use super::*;

#[test]
fn continuation_argv_repeats_the_invocation_and_guards_dashes() {
    let invocation = Invocation {
        code_arg: Some("repo".into()),
        graph_arg: None,
        format: Some("json"),
        frozen: true,
    };
    let argv = invocation.argv("find-all", flag_if("--offset", Some(50)), &["-x"]);
    assert_eq!(
        argv,
        [
            "atlas", "--code", "repo", "find-all", "--offset", "50", "--format", "json",
            "--frozen", "--", "-x"
        ]
    );
    let plain = Invocation::default().argv("repo-map", Vec::new(), &["a"]);
    assert_eq!(plain, ["atlas", "repo-map", "a"]);
}

#[derive(serde::Serialize)]
struct Page {
    items: Vec<String>,
    truncated: Option<Truncated>,
}

fn page(n: usize) -> Page {
    let items: Vec<String> = (0..n).map(|i| format!("{i:0>98}")).collect();
    Page {
        truncated: truncation(40, 0, n, 40, |offset| vec![offset.to_string()]),
        items,
    }
}

#[test]
fn a_page_is_the_largest_that_fits_and_says_what_it_cut() {
    let fitted = fit(40, 2_000, page).unwrap();
    assert!(to_json(&fitted).unwrap().len() <= 2_000);
    let n = fitted.items.len();
    assert!(
        to_json(&page(n + 1)).unwrap().len() > 2_000,
        "{n} is not the largest"
    );
    let truncated = fitted.truncated.unwrap();
    assert_eq!(truncated.reason, "max-bytes");
    assert_eq!(truncated.omitted, 40 - n);
    assert_eq!(truncated.next, [n.to_string()]);
    // Everything fits: no truncation.
    assert!(fit(40, 1_000_000, page).unwrap().truncated.is_none());
    // Not even one item fits: a typed error, not an empty page that asks for itself.
    assert!(matches!(
        fit(40, 100, page),
        Err(AtlasError::InvalidInput {
            what: "max-bytes",
            ..
        })
    ));
}

#[test]
fn page_sizes_and_ceilings_are_checked() {
    assert_eq!(ceiling(None).unwrap(), DEFAULT_MAX_BYTES);
    assert!(ceiling(Some(10)).is_err());
    assert!(ceiling(Some(2_000_000)).is_err());
    assert!(bounded("depth", Some(6), 2, 1..=5).is_err());
    assert_eq!(bounded("depth", None, 2, 1..=5).unwrap(), 2);
    assert_eq!(
        truncation(10, 0, 5, 5, |_| Vec::new()).unwrap().reason,
        "max-items"
    );
    assert!(truncation(10, 5, 5, 5, |_| Vec::new()).is_none());
    assert_eq!(clip("héllo", 2), ("hé".to_string(), true));
    assert_eq!(clip("hé", 2), ("hé".to_string(), false));
}
