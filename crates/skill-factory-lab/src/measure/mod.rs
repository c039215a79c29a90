//! How a probe set is measured: its verdicts through a policy on a split, and the rates, AUC and
//! thresholds of those verdicts.

pub mod evaluate;
pub mod metrics;
pub mod policy;
