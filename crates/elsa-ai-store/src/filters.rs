//! The `WHERE` clauses of the list queries, built once for both backends: each filter that is
//! set adds one condition on an indexed column, so every combination can use an index.

use elsa_ai_abstractions::{AuditQuery, ProposalQuery};
use elsa_workflows::{PageRequest, TenantId};
use sqlx::{Database, Encode, QueryBuilder, Type};

use crate::rows::{clamp_nanos, outcome_name, to_sql_count};

/// Appends the review-inbox filters of `query` for `tenant`.
pub(crate) fn proposals<DB>(sql: &mut QueryBuilder<DB>, tenant: &TenantId, query: &ProposalQuery)
where
    DB: Database,
    for<'t> String: Encode<'t, DB> + Type<DB>,
{
    sql.push(" WHERE tenant_id = ")
        .push_bind(tenant.as_str().to_owned());
    if let Some(status) = query.status {
        sql.push(" AND status = ")
            .push_bind(status.as_str().to_owned());
    }
    if let Some(conversation) = &query.conversation_id {
        sql.push(" AND conversation_id = ")
            .push_bind(conversation.as_str().to_owned());
    }
    if let Some(definition) = &query.definition_id {
        sql.push(" AND definition_id = ")
            .push_bind(definition.clone());
    }
    if let Some(actor) = &query.created_by {
        sql.push(" AND created_by = ").push_bind(actor.clone());
    }
}

/// Appends the audit-trail filters of `query` for `tenant`.
pub(crate) fn audit_events<DB>(sql: &mut QueryBuilder<DB>, tenant: &TenantId, query: &AuditQuery)
where
    DB: Database,
    for<'t> String: Encode<'t, DB> + Type<DB>,
    for<'t> i64: Encode<'t, DB> + Type<DB>,
{
    sql.push(" WHERE tenant_id = ")
        .push_bind(tenant.as_str().to_owned());
    if let Some(conversation) = &query.conversation_id {
        sql.push(" AND conversation_id = ")
            .push_bind(conversation.as_str().to_owned());
    }
    if let Some(proposal) = &query.proposal_id {
        sql.push(" AND proposal_id = ")
            .push_bind(proposal.as_str().to_owned());
    }
    if let Some(actor) = &query.actor_id {
        sql.push(" AND actor_id = ").push_bind(actor.clone());
    }
    if let Some(outcome) = query.outcome {
        sql.push(" AND outcome = ")
            .push_bind(outcome_name(outcome).to_owned());
    }
    if let Some(range) = query.time_range {
        sql.push(" AND occurred_at_ns >= ")
            .push_bind(clamp_nanos(range.from))
            .push(" AND occurred_at_ns <= ")
            .push_bind(clamp_nanos(range.to));
    }
}

/// Appends `LIMIT` and `OFFSET`.
pub(crate) fn page<DB>(sql: &mut QueryBuilder<DB>, page: PageRequest)
where
    DB: Database,
    for<'t> i64: Encode<'t, DB> + Type<DB>,
{
    sql.push(" LIMIT ")
        .push_bind(to_sql_count(page.limit))
        .push(" OFFSET ")
        .push_bind(to_sql_count(page.offset));
}
