//! `mcpr mock`: placeholder until the mock server lands.
#[derive(Debug, clap::Args)]
pub struct MockArgs {}
pub async fn run(_args: MockArgs) -> anyhow::Result<()> {
    anyhow::bail!("mock server not written yet")
}
