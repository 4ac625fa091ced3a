//! A transaction's work as the host runs it: once, or again after a run
//! the database asked to repeat (a conflict with another host's write).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::NoServices;
use host_sdk::abi::FfiError;
use host_sdk::{Context, Extension, ItemsError, Schedule};

/// Runs `work` as a schedule's job over services that roll every
/// transaction back once and run it again (as after a serialization
/// failure); answers what the host's transaction saw of each run.
fn run_job(work: impl Fn(&Context<'_>) + Send + Sync + 'static) -> Vec<Result<(), FfiError>> {
    let ext = Extension::new("tx", "Transactions", "1.0.0").schedule(
        "job",
        Schedule::Every(std::time::Duration::from_secs(60)),
        move |ctx| {
            work(ctx);
            Ok(())
        },
    );
    let host = NoServices::rerunning();
    ext.run_schedule_direct("job", &host).expect("job ran");
    host.runs()
}

/// A counter of runs, and the place a job leaves its transaction's result.
type Runs = Arc<AtomicUsize>;
type Outcome<T> = Arc<Mutex<Option<Result<T, ItemsError>>>>;

/// The work runs again after the conflict, and the value of the run that
/// committed is returned: what `start` must do with the work it is given.
fn assert_runs_again(start: fn(&Context<'_>, &dyn Fn() -> usize) -> Result<usize, ItemsError>) {
    let runs = Runs::default();
    let outcome = Outcome::default();
    let answers = {
        let (runs, outcome) = (runs.clone(), outcome.clone());
        run_job(move |ctx| {
            let count = || runs.fetch_add(1, Ordering::SeqCst) + 1;
            *outcome.lock().expect("outcome") = Some(start(ctx, &count));
        })
    };
    assert_eq!(runs.load(Ordering::SeqCst), 2, "the work ran again");
    assert_eq!(
        outcome.lock().expect("outcome").take(),
        Some(Ok(2)),
        "the value of the last run"
    );
    assert_eq!(answers, vec![Ok(()), Ok(())]);
}

#[test]
fn a_transaction_runs_again_and_returns_the_last_runs_value() {
    assert_runs_again(|ctx, count| ctx.transaction(|_tx| Ok::<_, ItemsError>(count())));
}

#[test]
#[allow(deprecated)]
fn retryable_transaction_is_still_the_transaction_that_runs_again() {
    assert_runs_again(|ctx, count| ctx.retryable_transaction(|_tx| Ok::<_, ItemsError>(count())));
}

#[test]
fn a_transaction_once_refuses_a_second_run_and_reports_the_conflict() {
    let runs = Runs::default();
    let outcome = Outcome::default();
    let answers = {
        let (runs, outcome) = (runs.clone(), outcome.clone());
        run_job(move |ctx| {
            // Work that may not run twice: it gives away what it owns.
            let owned = String::from("consumed");
            let result = ctx.transaction_once(|_tx| {
                runs.fetch_add(1, Ordering::SeqCst);
                drop(owned);
                Ok::<_, ItemsError>(())
            });
            *outcome.lock().expect("outcome") = Some(result);
        })
    };
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the work ran once");
    assert_eq!(answers.len(), 2);
    assert!(answers[0].is_ok());
    assert!(
        answers[1]
            .as_ref()
            .is_err_and(FfiError::is_run_once_refusal),
        "{answers:?}"
    );
    let result = outcome.lock().expect("outcome").take().expect("ran");
    assert_eq!(
        result.map_err(|e| e.code().to_string()),
        Err("SERVICE_UNAVAILABLE".to_string())
    );
}
