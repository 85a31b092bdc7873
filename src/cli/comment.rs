//! `fleet comment` and `fleet comments`: add and list comments. Adding, its line of text and
//! the read behind listing are shared with bd's `comment` and `comments`.

use super::context::Context;
use super::error::CliError;
use super::output::id_title;
use crate::model::{Comment, Issue};
use crate::store::{Store, StoreError};

#[derive(Debug, clap::Args)]
pub struct CommentArgs {
    pub id: String,
    /// The comment text.
    pub text: String,
    /// Author (default: the actor).
    #[arg(long)]
    pub author: Option<String>,
}

/// The arguments of `comments`; bd's `comments` takes them too, and `--file`.
#[derive(Debug, clap::Args)]
pub struct CommentsArgs {
    /// An issue id, or `add` followed by an id and the text.
    #[arg(required = true, num_args = 1..=3)]
    pub args: Vec<String>,
    /// Author when adding (default: the actor).
    #[arg(long)]
    pub author: Option<String>,
}

pub fn cmd_comment(ctx: &Context, args: CommentArgs) -> Result<(), CliError> {
    add_comment(ctx, &args.id, &args.text, args.author)
}

pub fn cmd_comments(ctx: &Context, args: CommentsArgs) -> Result<(), CliError> {
    match args.args.as_slice() {
        [verb, id, text] if verb == "add" => add_comment(ctx, id, text, args.author),
        [id] => list_comments(ctx, id),
        _ => Err(CliError::usage("expected `comments ID` or `comments add ID TEXT`")),
    }
}

fn add_comment(
    ctx: &Context,
    id: &str,
    text: &str,
    author: Option<String>,
) -> Result<(), CliError> {
    let (comment, issue) = write_comment(ctx, id, text, author)?;
    ctx.out.emit(&comment, || added_line(&comment, issue.as_ref()));
    Ok(())
}

/// `✓ Comment added to ID: title`, as both personalities print it (the bare id when the
/// issue is not at hand).
pub(super) fn added_line(comment: &Comment, issue: Option<&Issue>) -> String {
    match issue {
        Some(issue) => format!("✓ Comment added to {}", id_title(issue)),
        None => format!("✓ Comment added to {}", comment.issue_id),
    }
}

/// The resolved id of `id` and its comments, for listing them in both personalities.
pub(super) fn issue_comments(
    store: &Store,
    id: &str,
) -> Result<(String, Vec<Comment>), StoreError> {
    let reader = store.read()?;
    let id = reader.resolve(id)?;
    let comments = reader.comments(&id)?;
    Ok((id, comments))
}

/// The store side of adding a comment, shared by both personalities: returns the comment and
/// the issue it was added to.
pub(super) fn write_comment(
    ctx: &Context,
    id: &str,
    text: &str,
    author: Option<String>,
) -> Result<(Comment, Option<Issue>), CliError> {
    if text.trim().is_empty() {
        return Err(CliError::new("comment text is empty"));
    }
    let request =
        crate::tracker::Request::Comment { id: id.to_string(), author, text: text.to_string() };
    Ok(ctx.submit(request)?.into_commented()?)
}

fn list_comments(ctx: &Context, id: &str) -> Result<(), CliError> {
    let (id, comments) = issue_comments(&ctx.open_store()?, id)?;
    ctx.out.emit(&comments, || {
        if comments.is_empty() {
            return format!("{id} has no comments");
        }
        let mut lines = vec![format!("💬 Comments on {id} ({}):", comments.len())];
        for comment in &comments {
            lines.push(String::new());
            let author = super::output::printable(&comment.author);
            lines.push(format!("[{author}] {}:", comment.created_at));
            lines.extend(comment.text.lines().map(|l| format!("  {l}")));
        }
        lines.join("\n")
    });
    Ok(())
}
