//! example-host: a small content platform that loads every extension of its
//! extensions folder and serves them over HTTP, on SQLite or PostgreSQL.

fn main() -> std::process::ExitCode {
    example_host::run()
}
