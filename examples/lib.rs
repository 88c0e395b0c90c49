//! Examples live in this folder as cargo examples.
