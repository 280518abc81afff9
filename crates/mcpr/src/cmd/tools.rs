use crate::cli::GlobalArgs;
use crate::exit::{Failure, Outcome};
#[derive(Debug, clap::Args)]
pub struct ToolsArgs {}
pub async fn run(_global: &GlobalArgs, _args: ToolsArgs) -> Outcome {
    Err(Failure::internal("not written yet"))
}
