//! The list queries (the review inbox and the audit trail), built once for both backends:
//! each filter that is set adds one condition on an indexed column, so every combination can
//! use an index, and a page is a count plus one window of rows, newest first.

use elsa_ai_abstractions::{AiAuditEvent, AiError, AiProposal, AuditQuery, ProposalQuery};
use elsa_workflows::{Page, PageRequest, TenantId};
use sqlx::{Database, Decode, Encode, Executor, FromRow, IntoArguments, Pool, QueryBuilder, Type};

use crate::error::failed;
use crate::rows::{
    clamp_nanos, decode_audit_event, decode_proposal, from_sql_count, outcome_name, to_sql_count,
};

/// One page of the review inbox of `tenant`, newest first. `body` reads the JSON body as text
/// (`body` on SQLite, `body::text` on PostgreSQL).
pub(crate) async fn proposal_page<DB>(
    pool: &Pool<DB>,
    body: &str,
    tenant: &TenantId,
    query: &ProposalQuery,
) -> Result<Page<AiProposal>, AiError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'t> String: Encode<'t, DB> + Decode<'t, DB> + Type<DB>,
    for<'t> i64: Encode<'t, DB> + Decode<'t, DB> + Type<DB>,
    for<'r> (i64,): FromRow<'r, DB::Row>,
    for<'r> (i64, String): FromRow<'r, DB::Row>,
{
    let window = Window {
        table: "proposals",
        columns: format!("revision, {body}"),
        order: "created_at_ns DESC, id DESC",
        what: "proposals",
        page: query.page,
    };
    window
        .read(
            pool,
            |sql| proposals(sql, tenant, query),
            |(revision, body): (i64, String)| decode_proposal(revision, &body),
        )
        .await
}

/// One page of the audit trail of `tenant`, newest first; `body` as for [`proposal_page`].
pub(crate) async fn audit_page<DB>(
    pool: &Pool<DB>,
    body: &str,
    tenant: &TenantId,
    query: &AuditQuery,
) -> Result<Page<AiAuditEvent>, AiError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'t> String: Encode<'t, DB> + Decode<'t, DB> + Type<DB>,
    for<'t> i64: Encode<'t, DB> + Decode<'t, DB> + Type<DB>,
    for<'r> (i64,): FromRow<'r, DB::Row>,
    for<'r> (String,): FromRow<'r, DB::Row>,
{
    let window = Window {
        table: "audit_events",
        columns: body.to_owned(),
        order: "occurred_at_ns DESC, seq DESC",
        what: "audit events",
        page: query.page,
    };
    window
        .read(
            pool,
            |sql| audit_events(sql, tenant, query),
            |(body,): (String,)| decode_audit_event(&body),
        )
        .await
}

/// A page of one table: how many rows match, and the rows of the requested window.
struct Window {
    table: &'static str,
    columns: String,
    order: &'static str,
    what: &'static str,
    page: PageRequest,
}

impl Window {
    async fn read<DB, R, T>(
        self,
        pool: &Pool<DB>,
        filter: impl Fn(&mut QueryBuilder<DB>),
        decode: impl Fn(R) -> Result<T, AiError>,
    ) -> Result<Page<T>, AiError>
    where
        DB: Database,
        for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
        DB::Arguments: IntoArguments<DB>,
        for<'t> i64: Encode<'t, DB> + Decode<'t, DB> + Type<DB>,
        for<'r> (i64,): FromRow<'r, DB::Row>,
        for<'r> R: FromRow<'r, DB::Row> + Send + Unpin,
    {
        let mut count = QueryBuilder::<DB>::new(format!("SELECT COUNT(*) FROM {}", self.table));
        filter(&mut count);
        let total: i64 = count
            .build_query_scalar()
            .fetch_one(pool)
            .await
            .map_err(|e| failed(&format!("counting {}", self.what), e))?;
        let mut select =
            QueryBuilder::<DB>::new(format!("SELECT {} FROM {}", self.columns, self.table));
        filter(&mut select);
        select.push(format!(" ORDER BY {}", self.order));
        page(&mut select, self.page);
        let rows: Vec<R> = select
            .build_query_as()
            .fetch_all(pool)
            .await
            .map_err(|e| failed(&format!("reading {}", self.what), e))?;
        Ok(Page {
            items: rows.into_iter().map(decode).collect::<Result<_, _>>()?,
            total: from_sql_count(total),
            offset: self.page.offset,
            limit: self.page.limit,
        })
    }
}

/// Appends the review-inbox filters of `query` for `tenant`.
fn proposals<DB>(sql: &mut QueryBuilder<DB>, tenant: &TenantId, query: &ProposalQuery)
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
fn audit_events<DB>(sql: &mut QueryBuilder<DB>, tenant: &TenantId, query: &AuditQuery)
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
    if let Some(trace) = &query.trace_id {
        sql.push(" AND trace_id = ").push_bind(trace.clone());
    }
    if let Some(range) = query.time_range {
        sql.push(" AND occurred_at_ns >= ")
            .push_bind(clamp_nanos(range.from))
            .push(" AND occurred_at_ns <= ")
            .push_bind(clamp_nanos(range.to));
    }
}

/// Appends `LIMIT` and `OFFSET`.
fn page<DB>(sql: &mut QueryBuilder<DB>, page: PageRequest)
where
    DB: Database,
    for<'t> i64: Encode<'t, DB> + Type<DB>,
{
    sql.push(" LIMIT ")
        .push_bind(to_sql_count(page.limit))
        .push(" OFFSET ")
        .push_bind(to_sql_count(page.offset));
}
