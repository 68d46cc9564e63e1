//! Holds the workspace's integration tests (tests/) and benches (benches/).
