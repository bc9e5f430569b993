//! One self-contained HTML file with the whole viewer and a session inside: what a teammate
//! opens from disk, offline, without prof (`prof convert --to html`, and the page's download).
//!
//! The file holds the page (index.html with style.css inlined), its ES modules as text, the
//! wasm module (gzipped, base64) and the session (gzipped JSON, base64). `web/standalone.js`
//! starts it: it turns the modules into blob URLs and runs app.js. Browsers do not start module
//! workers from `file://` pages, so the worker is made here as a classic script: the wasm
//! module's JS glue with its `export`s removed, followed by worker.js without its module header.

use super::assets;
use base64::Engine as _;
use flate2::write::GzEncoder;
use flate2::Compression;
use prof_session::session::Session;
use prof_session::{Error, Result};
use std::collections::BTreeMap;
use std::io::Write;

/// The line that ends worker.js's module header (its imports), which the classic worker drops.
const WORKER_HEADER_END: &str = "// end of the module header\n";

/// Writes the single-file viewer of `session`, called `name` in the page, to `out`.
pub fn write_standalone_html(session: &Session, name: &str, out: impl Write) -> Result<()> {
    // The JSON is gzipped as it is written, never held whole: for a million names it was 42 MB
    // beside the session and its gzip, the peak of `prof convert --to html`.
    let mut json = Counted {
        inner: GzEncoder::new(Vec::new(), Compression::default()),
        bytes: 0,
    };
    prof_session::session::write(session, &mut json).map_err(Error::Write)?;
    let size = json.bytes;
    write_gzipped(&json.inner.finish().map_err(Error::Write)?, size, name, out)
}

/// A writer that passes everything on to `inner` and counts the bytes. Its `flush` does not
/// flush `inner`: a gzip encoder's flush ends a deflate block, which changes the compressed bytes
/// (the caller finishes the encoder instead).
struct Counted<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes the single-file viewer of a session file given gzipped (`size` bytes of JSON once
/// decompressed), called `name` in the page, to `out`: what the served page offers to download.
pub(crate) fn write_gzipped(
    session_gz: &[u8],
    size: u64,
    name: &str,
    mut out: impl Write,
) -> Result<()> {
    let text = |path: &str| -> Result<String> {
        let asset = assets::get(path).ok_or_else(|| missing(path))?;
        String::from_utf8(asset.data.into_owned()).map_err(|_| missing(path))
    };
    let mut modules: BTreeMap<String, String> = BTreeMap::new();
    for path in assets::paths() {
        let is_page_module = path.ends_with(".js")
            && !path.starts_with("pkg/")
            && path != "worker.js"
            && path != "standalone.js"
            && path != "boot.js";
        if is_page_module {
            modules.insert(path.clone(), text(&path)?);
        }
    }
    modules.insert(
        "worker.classic.js".to_owned(),
        classic_worker(&text("pkg/prof_viewer.js")?, &text("worker.js")?)?,
    );
    let wasm = assets::get("pkg/prof_viewer_bg.wasm").ok_or_else(|| missing("the wasm module"))?;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);

    let index = text("index.html")?;
    let head = replace_once(
        &index,
        r#"<link rel="stylesheet" href="style.css">"#,
        &format!("<style>\n{}</style>", text("style.css")?),
    )?;
    // boot.js starts the served page's worker and download before app.js; here the page's own
    // bootstrap (standalone.js) does, from what the file holds.
    let head = replace_once(&head, r#"<script defer src="boot.js"></script>"#, "")?;
    let (page, tail) = head
        .split_once(r#"<script type="module" src="app.js"></script>"#)
        .ok_or_else(|| missing("index.html's script tag"))?;
    let page = replace_once(
        page,
        "<title>prof</title>",
        &format!("<title>prof: {}</title>", html_escape(name)),
    )?;
    out.write_all(page.as_bytes()).map_err(Error::Write)?;
    writeln!(
        out,
        "<script type=\"application/json\" id=\"prof-modules\">{}</script>",
        script_safe(&serde_json::to_string(&modules).map_err(|e| Error::Write(e.into()))?)
    )
    .map_err(Error::Write)?;
    writeln!(
        out,
        "<script type=\"application/octet-stream\" id=\"prof-wasm\">{}</script>",
        b64(&gzip(&wasm.data, Compression::best())?)
    )
    .map_err(Error::Write)?;
    writeln!(
        out,
        "<script type=\"application/octet-stream\" id=\"prof-session-0\" data-prof-session \
         data-name=\"{}\" data-size=\"{size}\">{}</script>",
        html_escape(name),
        b64(session_gz)
    )
    .map_err(Error::Write)?;
    writeln!(out, "<script>\n{}</script>", text("standalone.js")?).map_err(Error::Write)?;
    out.write_all(tail.as_bytes()).map_err(Error::Write)?;
    Ok(())
}

/// The worker as a classic script: the glue without `export`, then worker.js after its header.
fn classic_worker(glue: &str, worker: &str) -> Result<String> {
    let mut script = String::with_capacity(glue.len() + worker.len() + 200);
    for line in glue.lines() {
        if line.starts_with("export {") {
            continue;
        }
        script.push_str(line.strip_prefix("export ").unwrap_or(line));
        script.push('\n');
    }
    if script.contains("import.meta") || script.contains("\nimport ") {
        return Err(missing("a wasm glue usable in a classic worker"));
    }
    let (_, body) = worker
        .split_once(WORKER_HEADER_END)
        .ok_or_else(|| missing("worker.js's module header marker"))?;
    script.push_str("const init = __wbg_init;\nconst WASM_URL = undefined;\n");
    script.push_str(body);
    Ok(script)
}

fn gzip(bytes: &[u8], level: Compression) -> Result<Vec<u8>> {
    let mut encoder = GzEncoder::new(Vec::new(), level);
    encoder.write_all(bytes).map_err(Error::Write)?;
    encoder.finish().map_err(Error::Write)
}

/// `text` with `from` replaced by `to`, which must occur exactly once.
fn replace_once(text: &str, from: &str, to: &str) -> Result<String> {
    if text.matches(from).count() != 1 {
        return Err(missing(from));
    }
    Ok(text.replacen(from, to, 1))
}

/// JSON made safe inside a `<script>` element: no `</` can end it early.
fn script_safe(json: &str) -> String {
    json.replace("</", "<\\/")
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The embedded page lacks something the single file needs: a build problem, not bad input.
fn missing(what: &str) -> Error {
    Error::InvalidOption(format!(
        "the embedded viewer lacks {what}; this prof binary was built without a complete web/"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof_session::export::fixture;

    #[test]
    fn the_file_holds_the_page_the_modules_the_wasm_and_the_session() {
        let session = fixture::session();
        let mut out = Vec::new();
        write_standalone_html(&session, "demo </script> & co.json", &mut out).unwrap();
        let html = String::from_utf8(out).unwrap();
        assert!(html.starts_with("<!doctype html>"));
        assert!(html.contains("<title>prof: demo &lt;/script&gt; &amp; co.json</title>"));
        assert!(html.contains("<style>"));
        assert!(!html.contains(r#"src="app.js""#));
        assert!(!html.contains(r#"src="boot.js""#));
        assert!(!html.contains("href=\"style.css\""));
        for id in ["prof-modules", "prof-wasm", "prof-session-0"] {
            assert!(html.contains(&format!("id=\"{id}\"")), "{id}");
        }
        // Nothing in the embedded data can close its script element early.
        let modules_start = html.find("id=\"prof-modules\">").unwrap();
        let modules_end = modules_start + html[modules_start..].find("</script>").unwrap();
        let modules: serde_json::Value =
            serde_json::from_str(&html[modules_start + 18..modules_end]).unwrap();
        assert!(modules["app.js"].as_str().unwrap().contains("import"));
        let worker = modules["worker.classic.js"].as_str().unwrap();
        assert!(!worker.contains("import.meta") && !worker.contains("export "));
        assert!(worker.contains("const init = __wbg_init;"));
        assert!(html.trim_end().ends_with("</html>"));
    }

    /// The single-file viewer's own parts: its `<title>`, the script elements it adds (their
    /// attributes, and the session's payload in full; not the embedded page modules, wasm and start
    /// script, which are the viewer's files and change with it).
    #[test]
    fn standalone_html_matches_its_golden_file() {
        let mut html = Vec::new();
        write_standalone_html(&fixture::session(), "demo.json", &mut html).unwrap();
        let html = String::from_utf8(html).unwrap();
        let title = html.lines().find(|l| l.contains("<title>")).unwrap();
        let mut own = format!("{}\n", title.trim());
        // Element by element, so a `<script` inside an embedded module is not taken for one.
        let mut rest = html.as_str();
        while let Some(at) = rest.find("<script") {
            let (open, after) = rest[at..].split_once('>').unwrap();
            let (body, after) = after.split_once("</script>").unwrap();
            let body = if open.contains("data-prof-session") {
                body
            } else {
                "(embedded)"
            };
            own.push_str(&format!("{open}>{body}</script>\n"));
            rest = after;
        }
        fixture::check_golden(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("src/golden/fixture.standalone.txt"),
            own.as_bytes(),
            "PROF_BLESS=1 cargo test -p prof-serve --features viewer --lib standalone",
        );
    }
}
