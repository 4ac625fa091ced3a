//! example-host: a small content platform that loads every extension of its
//! extensions folder and serves them over HTTP, on SQLite or PostgreSQL.

/// Small blocks from thread-local heaps, large ones from the C library
/// (see `host_sdk::allocator`).
#[global_allocator]
static ALLOCATOR: host_sdk::allocator::Allocator = host_sdk::allocator::Allocator;

fn main() -> std::process::ExitCode {
    example_host::run()
}
