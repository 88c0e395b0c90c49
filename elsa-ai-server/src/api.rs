//! The state every handler shares: the host services the API calls, the identity extractor
//! and the limits.

use std::sync::Arc;

use elsa_ai_abstractions::{AiConversationStore, AiOrchestrator, AttachmentKind};
use elsa_ai_host::{
    AttachmentSearch, AuditTrail, ConversationService, Metrics, ProposalService,
    ToolEnablementService, ToolRegistry,
};
use elsa_ai_mcp::{McpClients, McpEndpoint};
use elsa_ai_tools::families::GroundingFamily;
use elsa_workflows::TenantRouter;

use crate::identity::IdentityExtractor;
use crate::views::{PersistenceView, ProviderView};

/// What the API needs from a host; see [`WeaverApi::new`].
pub struct WeaverApiParts {
    /// Runs chat turns and serves their streams.
    pub orchestrator: Arc<dyn AiOrchestrator>,
    /// The tools, filtered per caller; also supplies the agents.
    pub registry: Arc<ToolRegistry>,
    /// Administrators' enablement decisions.
    pub enablement: Arc<ToolEnablementService>,
    /// Conversations (listing and history; ownership is checked through the host).
    pub conversations: Arc<dyn AiConversationStore>,
    /// Deleting conversations and keeping them shorter.
    pub conversation_service: Arc<ConversationService>,
    /// The proposal lifecycle (inbox, review, apply).
    pub proposals: ProposalService,
    /// The audit trail, read with `admin:ai`.
    pub audit: AuditTrail,
    /// Finds definitions and instances to attach.
    pub attachment_search: AttachmentSearch,
    /// The counters `GET /metrics` exposes (the ones the governor, the orchestrator and the
    /// proposal service count into).
    pub metrics: Arc<Metrics>,
    /// Who is calling.
    pub identity: Arc<dyn IdentityExtractor>,
    /// What `/ai/capabilities` reports about the provider.
    pub provider: ProviderView,
    /// Every provider the server runs, in configuration order (one unless `[[providers]]`).
    pub providers: Vec<ProviderView>,
    /// What `/ai/capabilities` reports about conversation storage.
    pub persistence: PersistenceView,
    /// The attachment kinds the host's context resolver handles.
    pub attachment_kinds: Vec<AttachmentKind>,
    /// Weaver's governed tools over MCP, served at `/mcp`.
    pub mcp_endpoint: McpEndpoint,
    /// The external MCP servers, whose state `/ai/capabilities` reports.
    pub mcp_servers: Arc<McpClients>,
    /// The grace window of the orchestrator, reported in capabilities.
    pub grace_window_secs: u64,
    /// What the grounding families of `/ai/capabilities` depend on besides the registry.
    pub grounding: GroundingSetup,
    /// The largest request body accepted, in bytes (413 above).
    pub max_body_bytes: usize,
}

/// What the grounding families `/ai/capabilities` reports depend on besides the caller's
/// tools: the configuration and the tenants' workflow backends.
#[derive(Clone)]
pub struct GroundingSetup {
    /// The families the configuration turned off (`[grounding]`).
    pub switched_off: Vec<GroundingFamily>,
    /// The tenants' workflow data: a tenant without any has nothing to ground answers in.
    pub workflows: Arc<TenantRouter>,
}

impl std::fmt::Debug for GroundingSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroundingSetup")
            .field("switched_off", &self.switched_off)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for WeaverApiParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeaverApiParts")
            .field("provider", &self.provider)
            .field("max_body_bytes", &self.max_body_bytes)
            .finish_non_exhaustive()
    }
}

/// The shared state of the API's handlers. Cheap to clone.
#[derive(Clone)]
pub struct WeaverApi {
    inner: Arc<WeaverApiParts>,
}

impl std::fmt::Debug for WeaverApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl WeaverApi {
    /// The default body limit: 256 KiB.
    pub const DEFAULT_MAX_BODY_BYTES: usize = 256 * 1024;

    /// The API over a host's services.
    pub fn new(parts: WeaverApiParts) -> Self {
        Self {
            inner: Arc::new(parts),
        }
    }

    /// The parts the API was built from.
    pub fn parts(&self) -> &WeaverApiParts {
        &self.inner
    }
}
