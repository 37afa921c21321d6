//! What the compiler tells a programmer whose handler moves its body out.

#[test]
fn a_handler_that_moves_its_captured_body_is_rejected() {
    let t = trybuild::TestCases::new();
    t.pass("ui/handler_clones_body.rs");
    t.compile_fail("ui/handler_moves_body.rs");
}
