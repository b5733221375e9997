//! Graph dumps of every fixture repository as insta snapshots. Fingerprints are not
//! redacted: they must be deterministic across runs and machines.

mod common;

use common::Sandbox;

fn check(fixture: &str) {
    let s = Sandbox::with_fixture(fixture);
    s.build_json();
    let dump = s.atlas(&["graph", "dump"]).success().stdout;
    insta::assert_snapshot!(format!("graph_dump_{fixture}"), dump);
}

#[test]
fn python() {
    check("python");
}

#[test]
fn rust() {
    check("rust");
}

#[test]
fn typescript() {
    check("typescript");
}

#[test]
fn javascript() {
    check("javascript");
}

#[test]
fn go() {
    check("go");
}

#[test]
fn java() {
    check("java");
}

#[test]
fn mixed() {
    check("mixed");
}
