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
pub mod status;
pub mod tools;
pub mod trust;
