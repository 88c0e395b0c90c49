//! weaver-testkit's own integration tests: the provenance of every copied fixture, and the
//! OpenID Provider helper against the real provider.

mod oidc_provider;
mod provenance;
