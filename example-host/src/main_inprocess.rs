//! example-host with the svc extension linked in (the `inprocess`
//! feature): `--builtin-svc` serves it without loading its library, which
//! the benchmarks use to measure what the ABI costs.

/// Small blocks from thread-local heaps, large ones from the C library
/// (see `host_sdk::allocator`).
#[global_allocator]
static ALLOCATOR: host_sdk::allocator::Allocator = host_sdk::allocator::Allocator;

fn main() -> std::process::ExitCode {
    example_host::run()
}
