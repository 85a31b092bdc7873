//! `bd comments` (list, or `comments add ID TEXT`) and `bd comment ID TEXT`.

use std::path::PathBuf;

use super::context::BdContext;
use crate::cli::CliError;
use crate::cli::comment::{self as fleet, added_line, issue_comments, write_comment};

#[derive(Debug, clap::Args)]
pub struct CommentArgs {
    /// The issue.
    pub id: String,
    /// The comment text (or use --file).
    pub text: Option<String>,
    /// Author (default: the actor).
    #[arg(long)]
    pub author: Option<String>,
    /// Read the text from a file ("-" for stdin).
    #[arg(short, long, value_name = "FILE")]
    pub file: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
#[group(id = "BdCommentsArgs")] // clap's default, the type name, is taken by the flattened one
pub struct CommentsArgs {
    #[command(flatten)]
    pub comments: fleet::CommentsArgs,
    /// Read the text to add from a file ("-" for stdin).
    #[arg(short, long, value_name = "FILE")]
    pub file: Option<PathBuf>,
}

impl CommentsArgs {
    /// Whether this is `comments add …` (a write).
    pub fn adds(&self) -> bool {
        self.comments.args.first().is_some_and(|verb| verb == "add")
    }
}

pub fn cmd_comment(ctx: &BdContext, args: CommentArgs) -> Result<(), CliError> {
    let text = comment_text(args.text, args.file.as_deref())?;
    add(ctx, &args.id, &text, args.author)
}

pub fn cmd_comments(ctx: &BdContext, args: CommentsArgs) -> Result<(), CliError> {
    match args.comments.args.as_slice() {
        [verb, id, rest @ ..] if verb == "add" => {
            let text = comment_text(rest.first().cloned(), args.file.as_deref())?;
            add(ctx, id, &text, args.comments.author)
        }
        [id] => list(ctx, id),
        _ => Err(CliError::new("usage: bd comments <id> | bd comments add <id> \"text\"")),
    }
}

fn comment_text(text: Option<String>, file: Option<&std::path::Path>) -> Result<String, CliError> {
    match (text, file) {
        (Some(text), _) => Ok(text),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .map_err(|e| CliError::new(format!("reading stdin: {e}")))?;
            Ok(text)
        }
        (None, Some(path)) => std::fs::read_to_string(path)
            .map_err(|e| CliError::new(format!("reading {}: {e}", path.display()))),
        (None, None) => Err(CliError::new("comment text required (or use --file)")),
    }
}

fn add(ctx: &BdContext, id: &str, text: &str, author: Option<String>) -> Result<(), CliError> {
    let (comment, issue) =
        write_comment(ctx.require_store()?, id, text, author).map_err(CliError::message_only)?;
    ctx.out.emit(&comment, || added_line(&comment, issue.as_ref()));
    Ok(())
}

fn list(ctx: &BdContext, id: &str) -> Result<(), CliError> {
    let (id, comments) = issue_comments(&ctx.open_store()?, id)?;
    ctx.out.emit(&comments, || {
        if comments.is_empty() {
            return format!("No comments on {id}");
        }
        let mut lines = vec![format!("\n💬 Comments on {id} ({}):", comments.len())];
        for comment in &comments {
            lines.push(String::new());
            lines.push(format!(
                "  [{}] {}",
                crate::cli::output::printable(&comment.author),
                comment.created_at.strftime("%Y-%m-%d %H:%M")
            ));
            lines.extend(comment.text.lines().map(|l| format!("    {l}")));
        }
        lines.join("\n")
    });
    Ok(())
}
