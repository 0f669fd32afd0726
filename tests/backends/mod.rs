//! Running a test on every storage backend: the tests are plain functions of a `Backend`, and these loop them over
//! `Backend::ALL` (as EnTT loops each typed test over its deletion policies), so a backend added to the table is
//! tested with no edit to any test.

// Each test binary that includes this module uses only some of it.
#![allow(dead_code)]

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use swarm::ecs::Backend;

/// Runs `test` on each backend in `Backend::ALL`'s order; a failure says which backend it was on, then fails the
/// test with the original panic.
pub fn each(test: fn(Backend)) {
    for backend in Backend::ALL {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| test(backend))) {
            eprintln!("the test failed on the {backend} backend");
            resume_unwind(panic);
        }
    }
}

/// Runs `test` on each backend and checks that it panics there with a message containing `expected`.
pub fn each_panics(test: fn(Backend), expected: &str) {
    for backend in Backend::ALL {
        let Err(panic) = catch_unwind(AssertUnwindSafe(|| test(backend))) else {
            panic!("no panic on the {backend} backend; expected one saying {expected:?}");
        };
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("(not a string)");
        assert!(message.contains(expected), "the {backend} backend panicked with {message:?}, not {expected:?}");
    }
}
