use crate::cli::GlobalArgs;
use crate::exit::{Failure, Outcome};
#[derive(Debug, clap::Args)]
pub struct CallArgs {}
pub async fn run(_global: &GlobalArgs, _args: CallArgs) -> Outcome {
    Err(Failure::internal("not written yet"))
}
