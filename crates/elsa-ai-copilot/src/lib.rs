//! Spike.
#[cfg(feature = "testing")]
pub mod testing;
