//! A transaction's work as the host runs it: once, or again after a run
//! the database asked to repeat (a conflict with another host's write).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::NoServices;
use host_sdk::abi::FfiError;
use host_sdk::{Extension, ItemsError, Schedule};

#[test]
fn a_retryable_transaction_runs_again_and_returns_the_last_runs_value() {
    let runs = Arc::new(AtomicUsize::new(0));
    let returned = Arc::new(AtomicUsize::new(0));
    let ext = {
        let (runs, returned) = (runs.clone(), returned.clone());
        Extension::new("tx", "Transactions", "1.0.0").schedule(
            "job",
            Schedule::Every(std::time::Duration::from_secs(60)),
            move |ctx| {
                let value = ctx.retryable_transaction(|_tx| {
                    Ok::<_, ItemsError>(runs.fetch_add(1, Ordering::SeqCst) + 1)
                })?;
                returned.store(value, Ordering::SeqCst);
                Ok(())
            },
        )
    };
    let host = NoServices::rerunning();
    ext.run_schedule_direct("job", &host).expect("job ran");
    assert_eq!(runs.load(Ordering::SeqCst), 2, "the work ran again");
    assert_eq!(
        returned.load(Ordering::SeqCst),
        2,
        "the value of the last run"
    );
    assert_eq!(host.runs(), vec![Ok(()), Ok(())]);
}

#[test]
fn a_one_shot_transaction_refuses_a_second_run_and_reports_the_conflict() {
    let runs = Arc::new(AtomicUsize::new(0));
    let outcome = Arc::new(Mutex::new(None));
    let ext = {
        let (runs, outcome) = (runs.clone(), outcome.clone());
        Extension::new("tx", "Transactions", "1.0.0").schedule(
            "job",
            Schedule::Every(std::time::Duration::from_secs(60)),
            move |ctx| {
                let result = ctx.transaction(|_tx| {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, ItemsError>(())
                });
                *outcome.lock().expect("outcome") = Some(result);
                Ok(())
            },
        )
    };
    let host = NoServices::rerunning();
    ext.run_schedule_direct("job", &host).expect("job ran");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the work ran once");
    let answers = host.runs();
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
