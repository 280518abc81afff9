//! # mcp-runtime
//!
//! The part of an AI agent that talks to MCP servers: it reads their configuration, connects to
//! them, lists and calls their tools, and shuts them down without leaving a process behind.
//!
//! The modules follow the lifecycle of a server, and data flows one way through them:
//! [`config`] (what servers exist) → [`client`] (one live connection).

pub mod client;
pub mod config;
