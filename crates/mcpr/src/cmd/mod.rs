//! One file per subcommand. Anything a host agent would also need belongs in `mcp-runtime`.

pub mod arguments;
pub mod call;
pub mod conformance;
pub mod demo;
pub mod edit;
pub mod login;
pub mod read;
pub mod registry;
pub mod serve;
pub mod servers;
pub mod shell;
pub mod state_key;
pub mod status;
pub mod tools;
pub mod trust;
pub mod trust_pins;

/// The cap on tool results of the agent-facing commands (`serve`, `shell`): `--max-output`
/// if given (`0`: none), else `MCPR_MAX_OUTPUT`, else about 100 KB.
pub fn agent_output_cap(
    flag: Option<usize>,
) -> Result<Option<mcp_runtime::client::OutputCap>, crate::exit::Failure> {
    use mcp_runtime::client::OutputCap;
    match flag {
        Some(0) => Ok(None),
        Some(limit) => Ok(Some(OutputCap::with_limit(limit))),
        None => OutputCap::from_env().map_err(crate::exit::Failure::usage),
    }
}
