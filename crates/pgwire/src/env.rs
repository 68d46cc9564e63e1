//! Where libpq's `PG*` variables come from: the process, or a map in tests.

/// One place the libpq environment comes from: the process, or a map in tests.
pub trait Env {
    /// The variable's value, if set and not empty.
    fn get(&self, key: &str) -> Option<String>;
}

/// The process environment.
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn get(&self, key: &str) -> Option<String> {
        std::env::var(key).ok().filter(|v| !v.is_empty())
    }
}
