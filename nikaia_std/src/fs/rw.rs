// STUB: replaced by the fs work (issue 2).
