// Passing counterpart of mapped_is_read_only.rs: to change a mapped file's
// bytes, copy them; writing the file is `fs::write` (spec/fs-root.md).
use nikaia_std::fs::{self, Root};

fn main() {
    if let Ok(root) = Root::dir(".") {
        if let Ok(page) = fs::map("index.html", &root) {
            let mut copy = page.to_vec();
            if let Some(first) = copy.first_mut() {
                *first = b'<';
            }
        }
    }
}
