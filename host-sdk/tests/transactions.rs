//! A transaction's work as the host runs it: once, or again after a run
//! the database asked to repeat (a conflict with another host's write).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::Mutex;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::sabi_types::{RMut, RRef};
use abi_stable::std_types::{RErr, ROk, RResult, RStr, RString};
use host_sdk::abi::{FfiAccess, FfiError, HostServices, HostServices_TO, TransactionBody_TO};
use host_sdk::{Extension, ItemsError, Schedule};

/// A host whose every transaction is rolled back once and run again, as
/// after a serialization failure; it keeps what each run answered.
#[derive(Default)]
struct RerunningHost {
    answers: Mutex<Vec<Result<(), FfiError>>>,
}

fn refused() -> RResult<RString, FfiError> {
    RErr(FfiError {
        code: "UNAVAILABLE".into(),
        message: "no items in this test".into(),
    })
}

impl HostServices for RerunningHost {
    fn read_by_query(&self, _: FfiAccess, _: RStr<'_>, _: RStr<'_>) -> RResult<RString, FfiError> {
        refused()
    }
    fn read_one(
        &self,
        _: FfiAccess,
        _: RStr<'_>,
        _: RStr<'_>,
        _: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        refused()
    }
    fn create_one(&self, _: FfiAccess, _: RStr<'_>, _: RStr<'_>) -> RResult<RString, FfiError> {
        refused()
    }
    fn create_many(&self, _: FfiAccess, _: RStr<'_>, _: RStr<'_>) -> RResult<RString, FfiError> {
        refused()
    }
    fn update_one(
        &self,
        _: FfiAccess,
        _: RStr<'_>,
        _: RStr<'_>,
        _: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        refused()
    }
    fn delete_one(&self, _: FfiAccess, _: RStr<'_>, _: RStr<'_>) -> RResult<RString, FfiError> {
        refused()
    }
    fn aggregate(&self, _: FfiAccess, _: RStr<'_>, _: RStr<'_>) -> RResult<RString, FfiError> {
        refused()
    }
    fn transaction(&self, mut body: TransactionBody_TO<'_, RMut<'_, ()>>) -> RResult<(), FfiError> {
        let mut last = ROk(());
        for _ in 0..2 {
            last = body.run(HostServices_TO::from_ptr(RRef::new(self), TD_Opaque));
            self.answers
                .lock()
                .expect("answers")
                .push(last.clone().into_result());
        }
        match last {
            RErr(e) if e.is_run_once_refusal() => RErr(FfiError {
                code: "SERVICE_UNAVAILABLE".into(),
                message: "The database is busy, try again".into(),
            }),
            other => other,
        }
    }
}

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
    let host = RerunningHost::default();
    ext.run_schedule_direct("job", &host).expect("job ran");
    assert_eq!(runs.load(Ordering::SeqCst), 2, "the work ran again");
    assert_eq!(
        returned.load(Ordering::SeqCst),
        2,
        "the value of the last run"
    );
    assert_eq!(*host.answers.lock().expect("answers"), vec![Ok(()), Ok(())]);
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
    let host = RerunningHost::default();
    ext.run_schedule_direct("job", &host).expect("job ran");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the work ran once");
    let answers = host.answers.lock().expect("answers");
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
