//! The four splits of a dataset, by name: train and val, which selection reads, and test and
//! held-out, which stay sealed until `lab freeze`.

use serde::de::{self, Deserialize, Deserializer};
use skill_factory_pycompat::repr;

/// A split of the dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Split {
    /// Fitting: thresholds and candidates are fitted here.
    Train,
    /// Selection: the gate compares candidates here.
    Val,
    /// Sealed: read only by `lab report` after `lab freeze`.
    Test,
    /// Sealed: sources or groups kept out entirely (read like test).
    HeldOut,
}

impl Split {
    /// Every split, in display order.
    pub const ALL: [Split; 4] = [Split::Train, Split::Val, Split::Test, Split::HeldOut];

    /// The name used in files and flags: `train`, `val`, `test`, `held-out`.
    pub fn name(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Val => "val",
            Split::Test => "test",
            Split::HeldOut => "held-out",
        }
    }

    /// The label used in reports: `training`, `validation`, `test`, `held-out`.
    pub fn label(self) -> &'static str {
        match self {
            Split::Train => "training",
            Split::Val => "validation",
            Split::Test => "test",
            Split::HeldOut => "held-out",
        }
    }

    /// Whether only `lab report`, after a freeze, may read it.
    pub fn is_sealed(self) -> bool {
        matches!(self, Split::Test | Split::HeldOut)
    }

    /// The split named `name` (as [`Split::name`] writes it).
    pub fn parse(name: &str) -> Option<Split> {
        Split::ALL.into_iter().find(|s| s.name() == name.trim())
    }
}

impl std::fmt::Display for Split {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Split {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Split::parse(&name).ok_or_else(|| {
            de::Error::custom(format!(
                "unknown split {}; use one of train, val, test, held-out",
                repr::repr_str(&name)
            ))
        })
    }
}
