//! Baselines for the redaction bench.

use crate::redaction::Redactor;

/// A raw scan of `bytes` with `redactor`'s anchor automaton (no document walk, no case
/// folding, no verification); returns the number of matches. Redaction of the same bytes
/// as a JSON document cannot be faster than this, so the bench reports it as the ratio's
/// denominator.
pub fn raw_anchor_scan(redactor: &Redactor, bytes: &[u8]) -> usize {
    redactor.anchor_matches(bytes)
}
