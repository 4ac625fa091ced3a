//! example-host with the svc extension linked in (the `inprocess`
//! feature): `--builtin-svc` serves it without loading its library, which
//! the benchmarks use to measure what the ABI costs.

fn main() -> std::process::ExitCode {
    example_host::run()
}
