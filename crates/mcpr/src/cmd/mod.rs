//! One file per subcommand. Anything a host agent would also need belongs in `mcp-runtime`.

pub(crate) mod argument_check;
pub(crate) mod arguments;
pub(crate) mod call;
pub(crate) mod call_arguments;
pub(crate) mod call_target;
pub(crate) mod conformance;
pub(crate) mod demo;
pub(crate) mod edit;
pub(crate) mod hosts;
pub(crate) mod login;
pub(crate) mod read;
pub(crate) mod registry;
pub(crate) mod sandbox;
pub(crate) mod serve;
pub(crate) mod servers;
pub(crate) mod shell;
pub(crate) mod state_key;
pub(crate) mod status;
pub(crate) mod task;
pub(crate) mod tools;
pub(crate) mod trust;
pub(crate) mod trust_pins;
pub(crate) mod trust_review;

/// The cap on tool results of the agent-facing commands (`serve`, `shell`): `--max-output`
/// if given (`0`: none), else `MCPR_MAX_OUTPUT`, else about 100 KB.
pub(crate) fn agent_output_cap(
    flag: Option<usize>,
) -> Result<Option<mcp_runtime::client::OutputCap>, crate::exit::Failure> {
    use mcp_runtime::client::OutputCap;
    match flag {
        Some(0) => Ok(None),
        Some(limit) => Ok(Some(OutputCap::with_limit(limit))),
        None => OutputCap::from_env().map_err(crate::exit::Failure::usage),
    }
}
