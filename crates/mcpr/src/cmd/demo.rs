use crate::cli::GlobalArgs;
use crate::exit::{Failure, Outcome};
#[derive(Debug, clap::Args)]
pub struct DemoArgs {}
pub async fn run(_global: &GlobalArgs, _args: DemoArgs) -> Outcome {
    Err(Failure::internal("not written yet"))
}
