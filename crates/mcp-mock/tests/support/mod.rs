//! Test support: the helpers shared by the workspace's tests (`mcp-testkit`), among them the
//! mock server as a fresh binary (`mock_bin`) and as a config (`mock`).

pub(crate) use mcp_testkit::*;
