//! weaver-testkit's own integration test: the provenance of every copied fixture.

mod provenance;
