//! [`JsonlProposalStore`]: Acme keeps Weaver's proposals in a JSON-lines file.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use elsa_ai_abstractions::{AiError, AiProposal, AiProposalStore, ProposalId, ProposalQuery};
use elsa_workflows::{Page, TenantId};

use crate::jsonl::{JsonLines, blocking, line, parse, unavailable};

/// Proposals in a JSON-lines file: every saved state of a proposal is one line, and the last
/// line of an id is the proposal as it is now. Ids are unique across tenants, reads are
/// tenant-scoped, and an update compares and sets the revision under the file's exclusive
/// lock, so of concurrent updates from one revision exactly one wins, across every handle
/// and process sharing the file.
#[derive(Clone, Debug)]
pub struct JsonlProposalStore {
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    file: JsonLines,
    /// The last line of every id read so far.
    proposals: HashMap<ProposalId, AiProposal>,
}

impl State {
    /// Takes in lines read from the file.
    fn absorb(&mut self, lines: Vec<String>) -> Result<(), AiError> {
        absorb(&mut self.proposals, self.file.path(), lines)
    }
}

fn absorb(
    proposals: &mut HashMap<ProposalId, AiProposal>,
    path: &Path,
    lines: Vec<String>,
) -> Result<(), AiError> {
    for line in lines {
        let proposal: AiProposal = parse(path, &line)?;
        proposals.insert(proposal.id.clone(), proposal);
    }
    Ok(())
}

impl JsonlProposalStore {
    /// Opens (or creates) the file at `path` and reads it.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, AiError> {
        let path = path.as_ref();
        let file = JsonLines::open(path).map_err(|e| unavailable(path, &e))?;
        let mut state = State {
            file,
            proposals: HashMap::new(),
        };
        let lines = state.file.read_new().map_err(|e| unavailable(path, &e))?;
        state.absorb(lines)?;
        Ok(Self {
            state: Arc::new(Mutex::new(state)),
        })
    }

    /// Runs `work` on the state, caught up with the file, on the blocking pool.
    async fn with<R: Send + 'static>(
        &self,
        work: impl FnOnce(&mut State) -> Result<R, AiError> + Send + 'static,
    ) -> Result<R, AiError> {
        let state = self.state.clone();
        blocking(move || {
            let mut state = state
                .lock()
                .map_err(|_| AiError::internal("store_failed", "a proposal write panicked"))?;
            work(&mut state)
        })
        .await
    }

    /// Runs `decide` under the file's exclusive lock on the proposals as they are now, and
    /// appends the proposal it returns.
    async fn write(
        &self,
        decide: impl FnOnce(&HashMap<ProposalId, AiProposal>) -> Result<AiProposal, AiError>
        + Send
        + 'static,
    ) -> Result<(), AiError> {
        self.with(|state| {
            let path = state.file.path().to_owned();
            let (mut locked, lines) = state.file.lock().map_err(|e| unavailable(&path, &e))?;
            absorb(&mut state.proposals, &path, lines)?;
            let proposal = decide(&state.proposals)?;
            locked
                .append(&line(&proposal)?)
                .map_err(|e| unavailable(&path, &e))?;
            state.proposals.insert(proposal.id.clone(), proposal);
            Ok(())
        })
        .await
    }

    /// Runs `read` on the proposals as they are now.
    async fn read<R: Send + 'static>(
        &self,
        read: impl FnOnce(&HashMap<ProposalId, AiProposal>) -> R + Send + 'static,
    ) -> Result<R, AiError> {
        self.with(|state| {
            let lines = state
                .file
                .read_new()
                .map_err(|e| unavailable(state.file.path(), &e))?;
            state.absorb(lines)?;
            Ok(read(&state.proposals))
        })
        .await
    }
}

fn matches(proposal: &AiProposal, query: &ProposalQuery) -> bool {
    query.status.is_none_or(|status| proposal.status == status)
        && query
            .conversation_id
            .as_ref()
            .is_none_or(|id| proposal.conversation_id.as_ref() == Some(id))
        && query
            .definition_id
            .as_deref()
            .is_none_or(|id| proposal.definition_id() == id)
        && query
            .created_by
            .as_deref()
            .is_none_or(|actor| proposal.created_by == actor)
}

#[async_trait]
impl AiProposalStore for JsonlProposalStore {
    async fn find(
        &self,
        id: &ProposalId,
        tenant_id: &TenantId,
    ) -> Result<Option<AiProposal>, AiError> {
        let (id, tenant_id) = (id.clone(), tenant_id.clone());
        self.read(move |proposals| {
            proposals
                .get(&id)
                .filter(|p| p.tenant_id == tenant_id)
                .cloned()
        })
        .await
    }

    async fn save(&self, proposal: &AiProposal) -> Result<(), AiError> {
        let proposal = proposal.clone();
        self.write(move |proposals| {
            if proposals.contains_key(&proposal.id) {
                return Err(AiError::conflict(
                    "proposal_exists",
                    format!("proposal '{}' already exists", proposal.id),
                ));
            }
            Ok(proposal)
        })
        .await
    }

    async fn update(&self, proposal: &AiProposal, expected_revision: u64) -> Result<(), AiError> {
        if Some(proposal.revision) != expected_revision.checked_add(1) {
            return Err(AiError::internal(
                "invalid_revision",
                format!(
                    "an update from revision {expected_revision} must carry revision {}, not {}",
                    expected_revision.saturating_add(1),
                    proposal.revision
                ),
            ));
        }
        let proposal = proposal.clone();
        self.write(move |proposals| {
            let stored = proposals
                .get(&proposal.id)
                .filter(|p| p.tenant_id == proposal.tenant_id)
                .ok_or_else(|| AiError::NotFound {
                    code: "proposal_not_found".into(),
                    message: format!("proposal '{}' not found", proposal.id),
                })?;
            if stored.revision != expected_revision {
                return Err(AiError::Conflict {
                    code: "proposal_revision_conflict".into(),
                    message: format!(
                        "proposal '{}' changed concurrently (revision {} is not {expected_revision})",
                        proposal.id, stored.revision
                    ),
                    current_state: Some(stored.status.as_str().to_owned()),
                });
            }
            Ok(proposal)
        })
        .await
    }

    async fn list(
        &self,
        tenant_id: &TenantId,
        query: &ProposalQuery,
    ) -> Result<Page<AiProposal>, AiError> {
        let (tenant_id, query) = (tenant_id.clone(), query.clone());
        self.read(move |proposals| {
            let mut found: Vec<AiProposal> = proposals
                .values()
                .filter(|p| p.tenant_id == tenant_id && matches(p, &query))
                .cloned()
                .collect();
            // Newest first; ids are time-ordered, so they break ties the same way.
            found.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
            query.page.slice(found)
        })
        .await
    }
}
