//! [`Redacted`]: the fact that a value has been redacted, carried in its type.

use std::ops::Deref;

/// A value the [`Redactor`](super::Redactor) has been over, so that whoever receives it (the
/// stream, the audit trail, the model) does not walk it a second time.
///
/// Only the redactor makes one from a raw value; inside this crate one may also be assembled
/// from parts that were each redacted (a tool event from its redacted arguments or result),
/// and debug builds check that redacting such a value again changes nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct Redacted<T>(T);

impl<T> Redacted<T> {
    /// A value built only from redacted parts and literals that hold no secret. Test builds
    /// check the claim wherever the value is appended to a stream.
    pub(crate) fn assembled(value: T) -> Self {
        Self(value)
    }

    /// The same redacted value in another container (`Arc`, `Option`): `wrap` may move or
    /// share the value, never change what it holds.
    pub(crate) fn wrapped<U>(self, wrap: impl FnOnce(T) -> U) -> Redacted<U> {
        Redacted(wrap(self.0))
    }

    /// The redacted value.
    pub fn get(&self) -> &T {
        &self.0
    }

    /// The redacted value, for a sink that no longer needs the mark.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> Deref for Redacted<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}
