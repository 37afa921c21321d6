// Rule: `fs::map` maps a file read-only and `fs::Mapped` derefs to `Bytes`,
// which cannot be written through: the page cache is never written by a
// mapping (spec/fs-root.md, "`map`, `read`, `write`").
use nikaia_std::fs::{self, Root};

fn main() {
    if let Ok(root) = Root::dir(".") {
        if let Ok(page) = fs::map("index.html", &root) {
            page[0] = b'<';
        }
    }
}
