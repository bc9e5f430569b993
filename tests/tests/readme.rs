//! The README's commands are run, not just shown: its short tour runs line by line with the
//! built `prof` first on `PATH`, and every command and option its table names must be one the
//! command accepts.

use prof_e2e::{prof, prof_bin, TempDir};
use std::path::Path;
use std::process::Command;

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    std::fs::read_to_string(path).expect("README.md is readable")
}

/// The lines of the first ```sh block after `marker`.
fn sh_block_after(text: &str, marker: &str) -> Vec<String> {
    let from = text.find(marker).expect("the README has its short tour");
    let rest = &text[from..];
    let start = rest.find("```sh\n").expect("a sh block follows") + "```sh\n".len();
    let end = rest[start..].find("```").expect("the block ends");
    rest[start..start + end]
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_readme_short_tour_runs() {
    let dir = TempDir::new("readme-tour");
    let bin_dir = prof_bin().parent().unwrap().to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(bin_dir).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let lines = sh_block_after(&readme(), "A short tour");
    assert!(lines.len() >= 4, "the tour has its commands: {lines:?}");
    for line in &lines {
        assert!(line.starts_with("prof "), "a tour line runs prof: {line}");
        let out = Command::new("sh")
            .args(["-c", line])
            .current_dir(dir.path())
            .env("PATH", &path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "README line `{line}` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for made in ["app.json.gz", "app.svg", "app.pb.gz"] {
        let len = std::fs::metadata(dir.join(made))
            .map(|m| m.len())
            .unwrap_or(0);
        assert!(len > 0, "the tour writes {made}");
    }
}

#[test]
fn every_command_and_option_in_the_readme_table_exists() {
    let text = readme();
    let table = &text[text.find("## Commands").unwrap()..text.find("A short tour").unwrap()];
    let mut checked = 0;
    // Every `prof CMD ...` span in the table, in either column, with the options it shows.
    let spans: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("| `prof "))
        .flat_map(|row| row.split('`').skip(1).step_by(2))
        .filter(|span| span.starts_with("prof "))
        .collect();
    for span in spans {
        let command = span.split_whitespace().nth(1).unwrap();
        let help = prof(&[command, "--help"]);
        assert!(help.status.success(), "`prof {command} --help` fails");
        let help = String::from_utf8_lossy(&help.stdout).into_owned();
        for option in span
            .split(|c: char| c.is_whitespace() || c == '[' || c == ']')
            .filter(|w| w.starts_with("--") && w.len() > 2)
        {
            let option = option.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
            assert!(
                help.contains(option),
                "the README names `{option}` for `prof {command}`, which does not take it"
            );
            checked += 1;
        }
    }
    assert!(checked >= 3, "the table names options: {checked}");
}

/// The crates.io crate named `prof` is another project: a dependency line with only a version
/// gets that one (and fails on prof's features). Every line the docs give names this repository.
#[test]
fn every_dependency_line_in_the_docs_names_this_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    let mut lines = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for line in text.lines().filter(|l| l.contains("prof = {")) {
            lines += 1;
            let from_here = line.contains("path =") || line.contains("git =");
            let published = line.contains("package = \"prof-profiler\"");
            assert!(from_here || published, "{}: {line}", file.display());
        }
    }
    assert!(
        lines >= 3,
        "the README, library.md and production.md give dependency lines"
    );
}
