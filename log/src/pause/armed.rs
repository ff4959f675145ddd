//! The armed pause point (feature `failpoints`): with
//! `STRATAFLOW_PAUSE_AT=STAGE:N` in the environment, the N-th time any
//! thread of the process reaches `STAGE`, it writes `paused at STAGE N` to
//! stderr and sleeps for good. Without the variable a pause point costs one
//! atomic load.

use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable naming the pause point.
pub const PAUSE_AT_VAR: &str = "STRATAFLOW_PAUSE_AT";

static PLAN: OnceLock<Option<(String, u64)>> = OnceLock::new();
static REACHED: AtomicU64 = AtomicU64::new(0);

fn plan() -> Option<&'static (String, u64)> {
    PLAN.get_or_init(|| {
        let text = std::env::var(PAUSE_AT_VAR).ok()?;
        let (stage, n) = text.split_once(':')?;
        Some((stage.to_owned(), n.parse().ok()?))
    })
    .as_ref()
}

/// Marks that a thread reached `stage`; pauses there if planned.
pub fn point(stage: &'static str) {
    let Some((planned, n)) = plan() else {
        return;
    };
    if planned != stage {
        return;
    }
    if REACHED.fetch_add(1, Ordering::SeqCst) + 1 == *n {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "paused at {stage} {n}");
        let _ = err.flush();
        loop {
            std::thread::park();
        }
    }
}
