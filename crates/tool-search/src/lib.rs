//! # tool-search
//!
//! Find the few tools an agent needs among hundreds or thousands, so that a host can leave most
//! tool definitions out of the model's context and let the model search for them. The index
//! reads each tool's name, title, description, server and input schema (as an MCP server lists
//! them, or any tool definition of the same shape), and ranks tools for a request as an agent
//! phrases it mid-task: "what did I change that is not staged yet", "cat /etc/hosts", "open an
//! issue on GitHub". Nothing here speaks a protocol; `mcp-runtime` puts the index behind its
//! discovery mode.
//!
//! ```
//! use serde_json::json;
//! use tool_search::{SearchableTool, ToolIndex};
//!
//! let mut index = ToolIndex::new();
//! index.set_server("git", &[
//!     SearchableTool::new("git", "git_status").with_description("Shows the working tree status"),
//!     SearchableTool::new("git", "git_diff_unstaged")
//!         .with_description("Shows changes in the working directory that are not yet staged"),
//! ]);
//! index.set_server("fs", &[
//!     SearchableTool::new("fs", "read_file")
//!         .with_description("Read the complete contents of a file")
//!         .with_input_schema(json!({"type": "object", "properties": {"path": {"type": "string"}}})),
//! ]);
//! let hits = index.search("what did I change that is not staged yet", 5);
//! assert_eq!(hits[0].tool.name, "git_diff_unstaged");
//! // A path is what `read_file` takes: the request's value says which tool, not its words.
//! assert_eq!(index.search("open ~/notes/todo.md", 5)[0].tool.name, "read_file");
//! ```
//!
//! A program indexes its own tool type by implementing [`Searchable`] for it: the index reads
//! a [`SearchableTool`] from each tool once, keeps the tool, and returns it in the hits.
//!
//! ## How it ranks
//!
//! The default ranking ([`Ranking::Tuned`]) is BM25F: identifiers are split and words stemmed,
//! each field of a tool has its own weight, the query is widened with a small table of words
//! that tools and agents use for the same thing, and the values a query carries (a path, a URL,
//! a time zone, a date…) are matched against what the tools' parameters take. Plain BM25
//! ([`Ranking::Bm25`]) stays available as the baseline; [`RankingParams`] holds the constants.
//!
//! Inside, data flows one way: `analyzer` (text to terms, and what words mean) and `arguments`
//! (the kinds of value a request carries and a parameter takes) → `rank` (fields, weights and
//! the arithmetic of a score) → `index` (the inverted index, queries and the search).
//!
//! ## Measured
//!
//! The constants were chosen on labelled query sets over a corpus of tools listed from real MCP
//! servers (`data/` in the source repository), and are measured by the `eval` feature's
//! evaluation: `cargo run --release -p tool-search --features eval --example eval`.
//! Closeness in meaning from a sentence model, distilled offline into a static table of word
//! vectors, was measured too and did not improve the ranking out of sample, so the index
//! carries no model.

#![deny(missing_docs)]

mod analyzer;
mod arguments;
#[cfg(feature = "eval")]
pub mod eval;
mod index;
mod rank;
mod summary;
mod tool;

pub use analyzer::split_words;
pub use index::{SearchHit, ToolIndex};
pub use rank::{Ranking, RankingParams};
pub use summary::{one_line_summary, parameter_summary};
pub use tool::{Searchable, SearchableTool};
