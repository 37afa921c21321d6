//! `nikaia serve` for the wasm32 target: the same route as the Linux
//! command (`http::dir_handler`), registered by `Server::run` for the Node
//! host in `host.cjs` to drive through `nikaia_std::http::handle`.
//! On other targets this crate is empty.

#[cfg(target_arch = "wasm32")]
mod exports {
    use nikaia_std::fs::Root;
    use nikaia_std::http::{dir_handler, Server};
    use nikaia_std::rt::Runtime;
    use wasm_bindgen::prelude::*;

    /// Serves the directory `root` as `nikaia serve` does: index.html, the
    /// slash redirect, dot-names hidden unless `hidden`, listings if `list`.
    #[wasm_bindgen]
    pub fn serve(root: &str, hidden: bool, list: bool) -> Result<(), JsError> {
        let dir =
            Root::dir(root).map_err(|e| JsError::new(&format!("cannot serve {root}: {e}")))?;
        // GET (and HEAD), and OPTIONS, as the Linux command routes them.
        let handler = std::sync::Arc::new(dir_handler(dir, hidden, list));
        let options = handler.clone();
        Server::with_runtime(Runtime::default())
            .route("/*path", move |req| handler(req))
            .method("OPTIONS", "/*path", move |req| options(req))
            .run()
            .map_err(|e| JsError::new(&e.to_string()))
    }
}
