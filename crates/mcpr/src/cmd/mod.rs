//! One file per subcommand. Anything a host agent would also need belongs in `mcp-runtime`.

pub mod call;
pub mod demo;
pub mod tools;
