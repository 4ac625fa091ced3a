//! The platform's and svc's contract as a client sees it, in one test
//! binary: most modules speak HTTP to `Host::in_process_svc()` (the test
//! kit's host with svc linked, serving on a loopback port from this
//! process: no process started, no library loaded); the few tests that
//! need a process start one. Every test runs on the suite's backend
//! (`TEST_DB`).

mod access_matrix;
mod answer_cache;
mod comments;
mod gamification;
mod interaction;
mod probe_writes;
mod public_site;
mod recordings;
mod site_platform;
mod users_directory;
