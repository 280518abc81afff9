//! What the host and its watchdog say to each other over their socket (a stream): the host
//! asks for a server to be started; the watchdog answers each request and reports each server's
//! exit. Fixed headers of native-endian 32-bit words, so that the watchdog reads and writes
//! them on its stack, without allocating.

/// A request: `[SPAWN, seq, payload bytes, argument count, variable count]`, with the server's
/// stdin, stdout and stderr attached (`SCM_RIGHTS`), then the payload: NUL-terminated strings,
/// the program, the working directory (empty: the watchdog's), the search path for a program
/// without a slash (empty: none), the arguments (the first is the program's name) and the
/// environment (`NAME=value`).
pub(super) const SPAWN: u32 = 1;

/// Words of a request's header.
pub(super) const REQUEST_WORDS: usize = 5;

/// The answer to request `seq`: `[STARTED, seq, pid, 0]`, or `[STARTED, seq, 0, errno]` when
/// the server could not be started.
pub(super) const STARTED: u32 = 1;

/// A server's exit: `[EXITED, 0, pid, wait status]`.
pub(super) const EXITED: u32 = 2;

/// Words of each answer and report.
pub(super) const REPORT_WORDS: usize = 4;

/// The largest payload the watchdog takes (about twice Linux's usual limit on the arguments and
/// environment of a program); a larger request is refused with `E2BIG`.
pub(super) const MAX_PAYLOAD: usize = 4 << 20;

/// The most strings (arguments and variables) one request may hold.
pub(super) const MAX_STRINGS: usize = 1 << 16;

/// Write `words` into `bytes` (four bytes each).
pub(super) fn put(words: &[u32], bytes: &mut [u8]) {
    for (word, out) in words.iter().zip(bytes.chunks_exact_mut(4)) {
        out.copy_from_slice(&word.to_ne_bytes());
    }
}

/// Read `words` from `bytes` (four bytes each).
pub(super) fn get(bytes: &[u8], words: &mut [u32]) {
    for (word, four) in words.iter_mut().zip(bytes.chunks_exact(4)) {
        let mut one = [0u8; 4];
        one.copy_from_slice(four);
        *word = u32::from_ne_bytes(one);
    }
}
