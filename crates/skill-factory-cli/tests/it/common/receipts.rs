//! Receipt tasks for the mock's needs model: 24 tasks in three kinds (tax, tip, discount),
//! each answered right only when the skill holds its kind's rule, unless `needs` says
//! otherwise for a model.

use std::path::Path;
use std::sync::Arc;

use skill_factory_mock::{Answering, MockConfig, MockServer, Needs, load_answers};

/// The three kinds, which are the tasks' answers and the needs model's groups.
pub const KINDS: [&str; 3] = ["tax", "tip", "discount"];

/// Writes the tasks into `dir` as `tasks.jsonl` and starts the mock serving them, its needs
/// adjusted by `needs` (e.g. [`Needs::with_model`]).
pub async fn serve(dir: &Path, needs: impl FnOnce(Needs) -> Needs) -> MockServer {
    let mut lines = String::new();
    for n in 0..8 {
        for kind in KINDS {
            lines.push_str(&format!(
                "{{\"id\": \"{kind}-{n}\", \"input\": \"Receipt {n} for table {}: which adjustment does the {kind} line make?\", \"expected\": \"{kind}\"}}\n",
                10 + n
            ));
        }
    }
    let dataset = dir.join("tasks.jsonl");
    std::fs::write(&dataset, lines).unwrap();
    let answers = load_answers(&dataset).unwrap();
    let needs = needs(Needs::new(&answers, Default::default(), Vec::new()));
    MockServer::start(MockConfig {
        answers,
        answering: Answering::Needs(Arc::new(needs)),
        ..MockConfig::default()
    })
    .await
    .unwrap()
}
