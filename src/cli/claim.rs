//! `fleet claim` and `fleet release`: take work atomically, and put it back.

use super::context::Context;
use super::error::CliError;
use super::output::id_title;
use crate::tracker::Request;
use crate::tracker::claims as claim;

#[derive(Debug, clap::Args)]
pub struct ClaimArgs {
    /// The issue to claim; without it, the first ready issue in ready order.
    pub id: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct ReleaseArgs {
    #[arg(required = true)]
    pub ids: Vec<String>,
}

pub fn cmd_claim(ctx: &Context, args: ClaimArgs) -> Result<(), CliError> {
    let summary = match &args.id {
        Some(id) => {
            let reply = ctx.submit(Request::Claim { id: id.clone() }).map_err(|mut error| {
                error.message = format!("could not claim {id}: {}", error.message);
                error
            })?;
            Some(reply.into_summary()?)
        }
        None => {
            let request = Request::ClaimNext { filter: Box::default() };
            ctx.submit(request)?.into_claimed()?
        }
    };
    ctx.out.emit(&summary, || match &summary {
        Some(s) => format!("✓ Claimed issue: {}", id_title(&s.issue)),
        None => "○ No ready work to claim".to_string(),
    });
    Ok(())
}

/// In remote claim mode, drops this replica's entries for issues free here from the remote's
/// claims ref, so other machines can claim them. A failure is a warning: the local release
/// stands, and the next claim or release on this machine drops the entries.
fn release_on_remote(ctx: &Context) -> Result<(), CliError> {
    let store = ctx.store()?;
    let claims = claim::Claims::of(store)?;
    if let (Some(remote), Err(error)) = (claims.remote(), claims.drop_released()) {
        ctx.out.warn(&format!(
            "released here, but the claims on remote {} still hold it: {error}",
            remote.name()
        ));
    }
    Ok(())
}

pub fn cmd_release(ctx: &Context, args: ReleaseArgs) -> Result<(), CliError> {
    let released = ctx.submit(Request::Release { ids: args.ids.clone() })?.into_summaries()?;
    release_on_remote(ctx)?;
    ctx.out.emit(&released, || {
        released
            .iter()
            .map(|s| format!("✓ Released {}", id_title(&s.issue)))
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(())
}
