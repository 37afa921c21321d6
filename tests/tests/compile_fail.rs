//! The Rust-side rules of spec/, as the compiler enforces them: each case in
//! `ui/` that must not compile names its rule and the spec section it comes
//! from in its first comment, and its `.stderr` is what the programmer
//! reads. The passing cases are the rule kept (spec/http.md, "Rules the
//! compiler enforces").

#[test]
fn the_compiler_enforces_the_rules_of_spec() {
    let t = trybuild::TestCases::new();

    // A handler is called for every request: it clones its body, never moves it.
    t.pass("ui/handler_clones_body.rs");
    t.compile_fail("ui/handler_moves_body.rs");

    // A handler may not mutate what it captured, nor capture what cannot
    // cross threads; shared state is atomic.
    t.pass("ui/handler_shares_counter.rs");
    t.compile_fail("ui/handler_mutates_capture.rs");
    t.compile_fail("ui/handler_not_send.rs");

    // A handler returns a row of the body table.
    t.pass("ui/handler_returns_row.rs");
    t.compile_fail("ui/handler_returns_non_row.rs");

    // A body may not borrow from the request; text from it is owned.
    t.pass("ui/handler_owns_request_text.rs");
    t.compile_fail("ui/handler_borrows_request.rs");

    // `http::File` has no default root.
    t.pass("ui/file_new_with_root.rs");
    t.compile_fail("ui/file_new_without_root.rs");

    // A body is read only by a route that declared it takes one; a streamed
    // body's pieces are lent, never kept.
    t.pass("ui/method_reads_body.rs");
    t.compile_fail("ui/route_reads_body.rs");
    t.pass("ui/sink_copies_piece.rs");
    t.compile_fail("ui/sink_keeps_piece.rs");

    // A producer may be resumed from any thread: what it holds is Send.
    t.pass("ui/producer_shares_state.rs");
    t.compile_fail("ui/producer_not_send.rs");

    // `fs::Mapped` is read-only; a copy can be changed.
    t.pass("ui/mapped_copied_to_edit.rs");
    t.compile_fail("ui/mapped_is_read_only.rs");
}
