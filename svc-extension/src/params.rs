//! Query parameters as docs/decisions.md §7 reads them: a `limit` or `offset`
//! that is not a non-negative integer, and `limit=0`, count as absent; a `page`
//! that is not a positive integer counts as absent. Values past the largest
//! signed 64-bit integer are clamped to it.

use host_sdk::Request;

fn non_negative(value: Option<&str>) -> Option<u64> {
    let v = value?;
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Past i64::MAX nothing counts anyway: clamp rather than overflow.
    Some(v.parse::<u64>().unwrap_or(u64::MAX).min(i64::MAX as u64))
}

/// `limit`, or `None` when absent or unusable.
pub fn limit(req: &Request) -> Option<u64> {
    non_negative(req.query("limit")).filter(|&n| n > 0)
}

/// `offset`, or `None` when absent or unusable.
pub fn offset(req: &Request) -> Option<u64> {
    non_negative(req.query("offset"))
}

/// `page`, or `None` when absent or unusable.
pub fn page(req: &Request) -> Option<u64> {
    non_negative(req.query("page")).filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(q: &str) -> Request {
        Request::new("GET", &format!("/x?{q}"), Vec::new())
    }

    #[test]
    fn only_plain_non_negative_integers_count() {
        assert_eq!(limit(&req("limit=5")), Some(5));
        for bad in [
            "limit=0",
            "limit=-1",
            "limit=abc",
            "limit=2.5",
            "limit=",
            "limit=+3",
            "limit= 4",
            "",
        ] {
            assert_eq!(limit(&req(bad)), None, "{bad}");
        }
        assert_eq!(offset(&req("offset=0")), Some(0));
        assert_eq!(offset(&req("offset=-3")), None);
        assert_eq!(page(&req("page=0")), None);
        assert_eq!(page(&req("page=2")), Some(2));
        let huge = i64::MAX as u64;
        assert_eq!(limit(&req("limit=9223372036854775808")), Some(huge));
        assert_eq!(offset(&req("offset=99999999999999999999999")), Some(huge));
    }
}
