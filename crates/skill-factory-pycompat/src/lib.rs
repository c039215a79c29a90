//! Python's observable output, byte for byte, for everything the reference tool writes or
//! reads that another tool compares exactly.
//!
//! Each module reproduces one Python behaviour and is named after the Python module it stands
//! for; each is tested against output recorded from CPython (and Node.js or PyYAML where they
//! are the reference), so the tests need no Python:
//!
//! * [`json`]: `json.dumps` (default, `indent=2`, any indent, canonical, ASCII-escaped) and
//!   `JSON.stringify`, one writer and one string escaper for all of them;
//! * [`repr`]: `repr()` and `str()` of strings, floats and decoded JSON values;
//! * [`float`]: `round(x, n)`, `"%.{p}g" % x`, `"{:,}".format(n)` and the builtin `sum()` of
//!   floats;
//! * [`random`]: `random.Random(seed)` with `getrandbits`, `shuffle`, `sample`, `random`;
//! * [`yaml`]: `yaml.safe_dump(..., sort_keys=False, allow_unicode=True)`;
//! * [`re`]: Python `re` patterns compiled with `fancy-regex`.
//!
//! A leaf: it depends on no other Skill Factory crate, and performs no I/O.

#![warn(missing_docs)]

pub mod float;
pub mod json;
pub mod random;
pub mod re;
pub mod repr;
pub mod yaml;
