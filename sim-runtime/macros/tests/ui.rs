//! Compile-fail tests: what a user sees when an attribute is misused, with
//! the error's position. The expected output is in `tests/ui/*.stderr`;
//! regenerate it with `TRYBUILD=overwrite` after checking the new text.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
