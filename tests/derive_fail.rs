//! What `#[derive(Bundle)]`, `#[derive(QueryData)]` and `#[derive(HoldsEntities)]` refuse, and the messages a user
//! reads then: each file of `tests/derive_fail/` must fail to compile with the errors in its `.stderr` beside it
//! (`TRYBUILD=overwrite` writes them anew after a deliberate change).

#[test]
fn derives_refuse_what_they_cannot_implement() {
    trybuild::TestCases::new().compile_fail("tests/derive_fail/*.rs");
}
