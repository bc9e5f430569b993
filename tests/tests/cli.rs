//! The `prof` command as a user runs it.

use prof_e2e::prof;

#[test]
fn help_lists_the_commands() {
    let out = prof(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Usage: prof"), "{text}");
}

#[test]
fn an_unknown_command_fails_with_usage_exit_code() {
    let out = prof(&["no-such-command"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_binary_embeds_the_viewer() {
    let out = prof(&["assets"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l == "index.html"), "{text}");
    assert!(
        text.lines().any(|l| l == "pkg/prof_viewer_bg.wasm"),
        "{text}"
    );
}
