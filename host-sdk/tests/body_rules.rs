//! What each route accepts as a body, as the host asks before reading it.

use host_sdk::{BodyRule, Response, Router};

fn router() -> Router {
    let mut r = Router::new();
    r.post("/small/:id", |_, _| Ok(Response::text(200, "")))
        .max_body(1024)
        .max_depth(4);
    r.post("/big", |_, _| Ok(Response::text(200, "")));
    r.get("/small/:id", |_, _| Ok(Response::text(200, "")));
    r
}

#[test]
fn the_rule_is_the_one_of_the_route_the_request_reaches() {
    let r = router();
    let small = BodyRule {
        max_bytes: Some(1024),
        max_depth: Some(4),
    };
    assert_eq!(r.body_rule("POST", "/small/x"), small);
    assert_eq!(r.body_rule("POST", "/small/x/"), small);
    assert_eq!(r.body_rule("POST", "/big"), BodyRule::default());
    assert_eq!(
        r.body_rule("GET", "/small/x"),
        BodyRule::default(),
        "another method is another route"
    );
}

#[test]
fn a_request_that_reaches_no_route_reads_little() {
    let r = router();
    for (method, path) in [
        ("POST", "/small"),
        ("POST", "/small/x/y"),
        ("PUT", "/big"),
        ("POST", "/"),
    ] {
        assert_eq!(
            r.body_rule(method, path).max_bytes,
            Some(BodyRule::UNROUTED_MAX_BYTES),
            "{method} {path}"
        );
    }
}

#[test]
fn a_rule_crosses_the_boundary_unchanged() {
    use host_sdk::abi::FfiBodyRule;
    for rule in [
        BodyRule::default(),
        BodyRule::HOST_LIMITS,
        BodyRule {
            max_bytes: Some(0),
            max_depth: Some(0),
        },
        BodyRule {
            max_bytes: Some(1024),
            max_depth: None,
        },
    ] {
        assert_eq!(BodyRule::from(FfiBodyRule::from(rule)), rule, "{rule:?}");
    }
}
