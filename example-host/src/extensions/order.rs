//! The order extensions are mounted in: each after the extensions it
//! requires (SDK 1.9, `Extension::requires`), in file-name order otherwise;
//! and which are refused because a requirement is missing, of another
//! version, refused itself, or part of a cycle.

use semver::{Version, VersionReq};

use super::LoadedExtension;

/// Another extension needed first, and the versions of it that will do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub id: String,
    /// A semver requirement (`>=0.1, <2`).
    pub versions: String,
}

/// What the ordering needs to know of one extension.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    pub id: &'a str,
    pub version: &'a str,
    pub requires: &'a [Requirement],
}

/// Whether `version` of `id` meets `requirement`; the reason when not.
fn meets(requirement: &Requirement, version: &str) -> Result<(), String> {
    let wanted = VersionReq::parse(&requirement.versions).map_err(|e| {
        format!(
            "requires `{}` with an unreadable version requirement `{}` ({e})",
            requirement.id, requirement.versions
        )
    })?;
    let found = Version::parse(version).map_err(|e| {
        format!(
            "requires `{}` {}, whose version `{version}` is not semver ({e})",
            requirement.id, requirement.versions
        )
    })?;
    if wanted.matches(&found) {
        Ok(())
    } else {
        Err(format!(
            "requires `{}` {}, but `{}` {version} is installed",
            requirement.id, requirement.versions, requirement.id
        ))
    }
}

/// The indices of `candidates` in the order to mount them, and the ones
/// refused with the reason. Extensions whose requirements are met come
/// after what they require; among those ready at once, the given order
/// (file names) holds.
pub fn mount_order(candidates: &[Candidate<'_>]) -> (Vec<usize>, Vec<(usize, String)>) {
    let index_of = |id: &str| candidates.iter().position(|c| c.id == id);
    let mut refused: Vec<Option<String>> = candidates
        .iter()
        .map(|c| {
            c.requires.iter().find_map(|r| match index_of(&r.id) {
                None => Some(format!(
                    "requires `{}` {}, which is not installed",
                    r.id, r.versions
                )),
                Some(i) => meets(r, candidates[i].version).err(),
            })
        })
        .collect();
    // A refusal passes on to what requires the refused one.
    loop {
        let mut changed = false;
        for (i, c) in candidates.iter().enumerate() {
            if refused[i].is_some() {
                continue;
            }
            let gone = c
                .requires
                .iter()
                .find(|r| index_of(&r.id).is_some_and(|j| refused[j].is_some()));
            if let Some(r) = gone {
                refused[i] = Some(format!("requires `{}`, which was refused", r.id));
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let mut order = Vec::new();
    let mut placed = vec![false; candidates.len()];
    loop {
        let ready = (0..candidates.len()).find(|&i| {
            !placed[i]
                && refused[i].is_none()
                && candidates[i]
                    .requires
                    .iter()
                    .all(|r| index_of(&r.id).is_some_and(|j| placed[j]))
        });
        match ready {
            Some(i) => {
                placed[i] = true;
                order.push(i);
            }
            None => break,
        }
    }
    let mut refusals = Vec::new();
    for (i, reason) in refused.into_iter().enumerate() {
        match reason {
            Some(reason) => refusals.push((i, reason)),
            None if !placed[i] => refusals.push((
                i,
                "its requirements form a cycle with other extensions".to_string(),
            )),
            None => {}
        }
    }
    (order, refusals)
}

/// Whether every requirement is met by an extension mounted already: for
/// an extension mounted alone (a dependency that failed to mount, a test
/// kit's list).
pub fn check_mounted(
    requires: &[Requirement],
    mounted: &[std::sync::Arc<LoadedExtension>],
) -> Result<(), String> {
    for r in requires {
        match mounted.iter().find(|e| e.id == r.id) {
            None => {
                return Err(format!(
                    "requires `{}` {}, which is not mounted before it",
                    r.id, r.versions
                ))
            }
            Some(e) => meets(r, &e.version)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(id: &str, versions: &str) -> Requirement {
        Requirement {
            id: id.into(),
            versions: versions.into(),
        }
    }

    fn order(list: &[(&str, &str, Vec<Requirement>)]) -> (Vec<&'static str>, Vec<String>) {
        let candidates: Vec<Candidate<'_>> = list
            .iter()
            .map(|(id, version, requires)| Candidate {
                id,
                version,
                requires,
            })
            .collect();
        let (order, refusals) = mount_order(&candidates);
        let names = ["a", "b", "c", "d"];
        let ids: Vec<&'static str> = order
            .iter()
            .map(|&i| {
                *names
                    .iter()
                    .find(|n| **n == list[i].0)
                    .expect("a known name")
            })
            .collect();
        let reasons = refusals
            .iter()
            .map(|(i, reason)| format!("{}: {reason}", list[*i].0))
            .collect();
        (ids, reasons)
    }

    #[test]
    fn an_extension_comes_after_what_it_requires() {
        let (ids, refused) = order(&[
            ("a", "1.0.0", vec![req("c", ">=0.1")]),
            ("b", "1.0.0", vec![]),
            ("c", "0.1.0", vec![]),
        ]);
        assert_eq!(ids, ["b", "c", "a"]);
        assert!(refused.is_empty(), "{refused:?}");
    }

    #[test]
    fn a_missing_or_other_version_requirement_is_refused_and_so_are_its_dependents() {
        let (ids, refused) = order(&[
            ("a", "1.0.0", vec![req("b", "^2")]),
            ("b", "1.4.0", vec![]),
            ("c", "1.0.0", vec![req("a", "*")]),
            ("d", "1.0.0", vec![req("svc", ">=0.1")]),
        ]);
        assert_eq!(ids, ["b"]);
        assert_eq!(
            refused,
            [
                "a: requires `b` ^2, but `b` 1.4.0 is installed",
                "c: requires `a`, which was refused",
                "d: requires `svc` >=0.1, which is not installed",
            ]
        );
    }

    #[test]
    fn a_cycle_and_an_unreadable_requirement_are_refused() {
        let (ids, refused) = order(&[
            ("a", "1.0.0", vec![req("b", "*")]),
            ("b", "1.0.0", vec![req("a", "*")]),
            ("c", "1.0.0", vec![req("d", "not a range")]),
            ("d", "1.0.0", vec![]),
        ]);
        assert_eq!(ids, ["d"]);
        assert_eq!(refused.len(), 3, "{refused:?}");
        assert!(refused[0].starts_with("a: its requirements form a cycle"));
        assert!(refused[2].starts_with("c: requires `d` with an unreadable version requirement"));
    }
}
