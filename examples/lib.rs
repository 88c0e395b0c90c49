//! Examples live in this folder as cargo examples:
//!
//! - `module_author`: a module written outside the Weaver crates adds a read-only tool and a
//!   proposal tool; the proposal tool stays unavailable until an administrator enables it.
