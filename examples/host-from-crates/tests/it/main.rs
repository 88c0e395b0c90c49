//! The host's tests, in one binary: its stores against the repository's storage conformance
//! suite, and the whole host over HTTP on a real socket.

mod conformance;
mod http;
