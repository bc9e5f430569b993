//! The command-line reference in Markdown, made from the same clap definitions that parse the
//! arguments, so `docs/cli.md` cannot drift from the command: a test compares the two.

use clap::CommandFactory;

/// `docs/cli.md`: every visible subcommand's long help, in the order `prof --help` lists them.
pub fn markdown() -> String {
    let mut command = super::Cli::command();
    command.build();
    let mut out = String::from(
        "# Command-line reference\n\n\
         Generated from the `prof` command's own argument definitions \
         (`PROF_BLESS=1 cargo test -p prof --features cli --bin prof reference` rewrites it; \
         a test fails when it differs). [commands.md](commands.md) explains what each command \
         computes.\n\n",
    );
    section(&mut out, "prof", &mut command.clone());
    for sub in command.get_subcommands_mut() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        let name = format!("prof {}", sub.get_name());
        section(&mut out, &name, sub);
    }
    out
}

fn section(out: &mut String, title: &str, command: &mut clap::Command) {
    let help = command.render_long_help().to_string();
    out.push_str(&format!("## `{title}`\n\n```text\n"));
    for line in help.trim_end().lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str("```\n\n");
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn docs_cli_md_is_the_reference_the_command_generates() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md");
        let generated = super::markdown();
        if std::env::var_os("PROF_BLESS").is_some() {
            std::fs::write(&path, &generated).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "docs/cli.md differs from the command's help: rewrite it with \
             `PROF_BLESS=1 cargo test -p prof --features cli --bin prof reference`"
        );
    }
}
