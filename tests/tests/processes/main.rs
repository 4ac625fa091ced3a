//! Tests of real host processes, in one test binary: the ABI and its
//! frozen fixtures, several hosts on one database, crashes, restarts and
//! signals, the soak, databases of earlier releases, the SDK in Node and
//! Chromium, SMTP and S3 servers, hostile clients. Each module starts the
//! hosts it needs through the harness (`platform_tests::Host`), on the
//! suite's backend (`TEST_DB`).

mod abi;
mod access_routes;
mod admin_app;
mod assets;
mod backends;
mod backups;
mod browser;
mod directus_sdk;
mod docs;
mod durability;
mod fallbacks;
mod fault_isolation;
mod field_row_rules;
mod files;
mod fuzz_http;
mod hello_example;
mod hostile;
mod hot_reload;
mod inprocess;
mod layering;
mod member_probe;
mod migrations;
mod openapi;
mod platform;
mod registration_mail;
mod relations;
mod rolling_upgrade;
mod scaffold;
mod schema_api;
mod several_hosts;
mod sign_in;
mod soak;
mod throttle;
mod upgrades;
