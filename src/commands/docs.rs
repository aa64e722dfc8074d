//! `kwire completions SHELL` and `kwire man`: generated from the clap definitions in
//! `src/cli.rs`, so they always match the options.

use std::path::Path;

use crate::cli::command as cli_command;
use crate::exit::{Exit, Failure};
use crate::output::emit;

/// Prints the completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) {
    let mut command = cli_command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "kwire", &mut script);
    emit(&String::from_utf8_lossy(&script));
}

/// Prints kwire.1, or writes it and one page per subcommand into `out_dir`.
pub fn man(out_dir: Option<&Path>) -> Result<(), Failure> {
    let command = cli_command();
    match out_dir {
        Some(dir) => {
            let cannot = |e: std::io::Error| {
                Failure::new(Exit::USAGE, format!("cannot write man pages to {}: {e}", dir.display()))
            };
            std::fs::create_dir_all(dir).map_err(cannot)?;
            clap_mangen::generate_to(command, dir).map_err(cannot)
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command)
                .render(&mut page)
                .map_err(|e| Failure::new(Exit::USAGE, format!("cannot render the man page: {e}")))?;
            emit(&String::from_utf8_lossy(&page));
            Ok(())
        }
    }
}
