//! How deep this process sits in a chain of processes that mcpr started (a leaf: imports
//! nothing of ours).
//!
//! Every process mcpr starts (stdio servers, `!command` values) gets [`NESTING_ENV`] set to
//! one more than mcpr's own value, and the variable survives wrappers such as `npx` or `sh -c`
//! that pass their environment on. A gateway finds in it how many mcpr processes stand above it
//! and refuses to start past [`MAX_GATEWAY_DEPTH`], so a config that runs `mcpr serve` through a
//! wrapper cannot start gateways without bound. This is the second guard: discovery already
//! skips an entry that plainly runs `mcpr serve` over the same configs.
//!
//! ```
//! use mcp_runtime::nesting;
//! // Not started by mcpr: the top of a chain.
//! assert_eq!(nesting::depth_of(None), 0);
//! assert_eq!(nesting::depth_of(Some("2")), 2);
//! // A value that is not a number counts as deep as allowed, never as the top.
//! assert_eq!(nesting::depth_of(Some("x")), nesting::MAX_GATEWAY_DEPTH);
//! ```

use std::ffi::OsString;
use std::sync::OnceLock;

/// The variable that carries the depth: how many mcpr processes stand above a process.
pub const NESTING_ENV: &str = "MCPR_NESTING";

/// The deepest a gateway may run: a gateway in front of a scoped gateway in front of another
/// is as deep as any real set-up goes.
pub const MAX_GATEWAY_DEPTH: u32 = 2;

/// The depth a value of [`NESTING_ENV`] says: 0 when unset, and [`MAX_GATEWAY_DEPTH`] for a
/// value that is not a number (someone meant to mark it; err on the side of stopping).
pub fn depth_of(value: Option<&str>) -> u32 {
    match value.map(str::trim) {
        None | Some("") => 0,
        Some(value) => value.parse().unwrap_or(MAX_GATEWAY_DEPTH),
    }
}

/// This process's depth, read once from its environment.
pub fn depth() -> u32 {
    static DEPTH: OnceLock<u32> = OnceLock::new();
    *DEPTH.get_or_init(|| {
        let value = std::env::var_os(NESTING_ENV);
        depth_of(value.as_ref().map(|v| v.to_string_lossy()).as_deref())
    })
}

/// The value [`NESTING_ENV`] takes in a process this one starts.
pub fn child_value() -> OsString {
    depth().saturating_add(1).to_string().into()
}

/// Whether a gateway at this process's depth is nested too deep to start.
pub fn gateway_too_deep() -> bool {
    depth() > MAX_GATEWAY_DEPTH
}
