//! The tool registry: every tool linked through `inventory` plus those a host registers in
//! code, validated at registration and filtered for each caller.

mod access;
mod validation;

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiAgentDefinition, AiCaller, AiError, AiTool, AiToolDefinition, AiToolEnablementStore,
    AiToolQuery, AiToolRegistry, Permission, ToolNaming, linked_tools,
};
use elsa_workflows::TenantId;
use serde_json::Value;

use crate::NameMap;
use crate::agents::AgentRegistry;
use crate::enablement::{EnablementCache, EnablementCaching, EnablementDecisions};
use access::{PermissionIndex, PermissionMask};

pub use access::{ToolPolicy, agent_names_tool, requires_tenant, tool_admits_agent};
pub use validation::{MAX_TOOL_NAME_LEN, ToolRegistrationError};

/// A tool as the registry holds it: the tool, the metadata validated at registration, and
/// what was precomputed from it (canonical name, the definition as offered, compiled input
/// schema, permission mask).
pub struct RegisteredTool {
    tool: Arc<dyn AiTool>,
    definition: Arc<AiToolDefinition>,
    /// The definition under the registry's [`ToolNaming`]: the same handle as `definition`
    /// unless the tool is offered under its grounding name.
    offered: Arc<AiToolDefinition>,
    /// The canonical name, shared by every record of a call instead of copied into each.
    name: Arc<str>,
    validator: jsonschema::Validator,
    required: PermissionMask,
    tenants: Option<Arc<[TenantId]>>,
}

impl std::fmt::Debug for RegisteredTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredTool")
            .field("name", &self.definition.name)
            .finish_non_exhaustive()
    }
}

/// How many schema violations an `invalid_arguments` error lists.
const MAX_REPORTED_VIOLATIONS: usize = 5;

impl RegisteredTool {
    /// The metadata, exactly as validated at registration.
    pub fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    /// The metadata as a shared handle.
    pub fn shared_definition(&self) -> &Arc<AiToolDefinition> {
        &self.definition
    }

    /// The metadata as models and clients are shown it: `name` is the spelling the
    /// registry's [`ToolNaming`] offers (the canonical name stays in [`Self::name`]).
    pub fn offered_definition(&self) -> &Arc<AiToolDefinition> {
        &self.offered
    }

    /// The canonical name (the definition's `name`), which audit records and metrics use
    /// whichever name a call used.
    pub fn name(&self) -> &Arc<str> {
        &self.name
    }

    /// Whether the agent's scope names the tool, by any name it answers to (an agent may
    /// list either spelling).
    pub fn named_by(&self, agent: &AiAgentDefinition) -> bool {
        self.definition
            .names()
            .any(|name| agent_names_tool(agent, name))
    }

    /// The tool itself.
    pub fn tool(&self) -> &Arc<dyn AiTool> {
        &self.tool
    }

    /// Whether callers of `tenant` see the tool at all. A tool registered for some tenants
    /// (an MCP server's `tenants`) does not exist for the others: not listed, not found.
    pub fn serves(&self, tenant: &TenantId) -> bool {
        self.tenants
            .as_deref()
            .is_none_or(|tenants| tenants.contains(tenant))
    }

    /// Validates arguments against the compiled input schema: 400 `invalid_arguments`
    /// naming where and why, never echoing argument values.
    pub fn validate_arguments(&self, arguments: &Value) -> Result<(), AiError> {
        // The usual case answers without building error values; only a refusal lists them.
        if self.validator.is_valid(arguments) {
            return Ok(());
        }
        let mut violations = self.validator.iter_errors(arguments).peekable();
        if violations.peek().is_none() {
            return Ok(());
        }
        let listed: Vec<String> = violations
            .take(MAX_REPORTED_VIOLATIONS)
            .map(|error| {
                let at = error.instance_path().to_string();
                let at = if at.is_empty() { "/".to_owned() } else { at };
                format!("{at}: {}", error.masked())
            })
            .collect();
        Err(AiError::bad_request(
            "invalid_arguments",
            format!(
                "arguments for '{}' do not match its input schema: {}",
                self.definition.name,
                listed.join("; ")
            ),
        ))
    }
}

/// Builds a [`ToolRegistry`], refusing unsafe or duplicate definitions.
#[derive(Default)]
pub struct ToolRegistryBuilder {
    tools: Vec<PendingTool>,
    policy: ToolPolicy,
    naming: ToolNaming,
    caching: EnablementCaching,
}

/// A validated tool waiting for [`ToolRegistryBuilder::build`].
struct PendingTool {
    tool: Arc<dyn AiTool>,
    definition: AiToolDefinition,
    validator: jsonschema::Validator,
    tenants: Option<Arc<[TenantId]>>,
}

impl std::fmt::Debug for ToolRegistryBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistryBuilder")
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl ToolRegistryBuilder {
    /// Registers every tool linked into the program through `inventory`.
    pub fn linked_tools(self) -> Result<Self, ToolRegistrationError> {
        self.linked_tools_where(|_| true)
    }

    /// Registers the tools linked into the program for which `keep` says yes (a server
    /// that turns a family of tools off leaves them out: they do not exist for anyone).
    pub fn linked_tools_where(
        self,
        keep: impl Fn(&AiToolDefinition) -> bool,
    ) -> Result<Self, ToolRegistrationError> {
        linked_tools()
            .filter(|tool| keep(tool.definition()))
            .try_fold(self, Self::tool)
    }

    /// Registers one tool, validating its metadata and compiling its input schema.
    pub fn tool(self, tool: Arc<dyn AiTool>) -> Result<Self, ToolRegistrationError> {
        self.tool_for_tenants(tool, None)
    }

    /// Registers a tool that only callers of `tenants` see (`None`: every tenant); for the
    /// others it does not exist.
    pub fn tool_for_tenants(
        mut self,
        tool: Arc<dyn AiTool>,
        tenants: Option<Vec<TenantId>>,
    ) -> Result<Self, ToolRegistrationError> {
        let definition = tool.definition().clone();
        validation::check_definition(&definition)?;
        // One name, one tool: a grounding name may not be another tool's name either.
        if let Some(taken) = definition.names().find(|name| {
            self.tools
                .iter()
                .any(|t| t.definition.names().any(|other| other == *name))
        }) {
            return Err(ToolRegistrationError::Duplicate {
                name: taken.to_owned(),
            });
        }
        let validator = validation::compile_schema(&definition)?;
        self.tools.push(PendingTool {
            tool,
            definition,
            validator,
            tenants: tenants.map(Arc::from),
        });
        Ok(self)
    }

    /// Sets the mutability and danger policy (default: [`ToolPolicy::default`]).
    pub fn policy(mut self, policy: ToolPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Which spelling of their names tools are listed under (default
    /// [`ToolNaming::Contract`]); calls reach a tool by either.
    pub fn naming(mut self, naming: ToolNaming) -> Self {
        self.naming = naming;
        self
    }

    /// How the registry keeps each tenant's enablement decisions (default
    /// [`EnablementCaching::Off`]: read for every call and listing).
    pub fn enablement_caching(mut self, caching: EnablementCaching) -> Self {
        self.caching = caching;
        self
    }

    /// The registry; tools are filtered through `agents` and the tenants' decisions in
    /// `enablement`.
    pub fn build(
        mut self,
        agents: Arc<AgentRegistry>,
        enablement: Arc<dyn AiToolEnablementStore>,
    ) -> ToolRegistry {
        // Listed in the order of the names they are offered under.
        let naming = self.naming;
        self.tools
            .sort_by(|a, b| (a.definition.name_for(naming)).cmp(b.definition.name_for(naming)));
        let mut permissions = PermissionIndex::default();
        for PendingTool { definition, .. } in &self.tools {
            definition
                .permissions
                .iter()
                .for_each(|p| permissions.intern(p));
        }
        permissions.intern(&Permission::PROPOSE_WORKFLOWS);
        let propose = permissions.mask([&Permission::PROPOSE_WORKFLOWS]);
        let mut index = NameMap::with_capacity_and_hasher(self.tools.len(), Default::default());
        let mut mcp_servers: HashMap<String, Vec<usize>> = HashMap::new();
        let tools: Vec<RegisteredTool> = self
            .tools
            .into_iter()
            .enumerate()
            .map(|(position, pending)| {
                let PendingTool {
                    tool,
                    definition,
                    validator,
                    tenants,
                } = pending;
                for name in definition.names() {
                    index.insert(name.to_owned(), position);
                }
                if let Some(server) =
                    validation::mcp_server(&definition.name).filter(|_| access::is_mcp(&definition))
                {
                    mcp_servers
                        .entry(server.to_owned())
                        .or_default()
                        .push(position);
                }
                let name = Arc::from(definition.name.as_str());
                let definition = Arc::new(definition);
                let offered = match definition.name_for(self.naming) {
                    offered if offered == definition.name => Arc::clone(&definition),
                    offered => Arc::new(AiToolDefinition {
                        name: offered.to_owned(),
                        ..AiToolDefinition::clone(&definition)
                    }),
                };
                RegisteredTool {
                    required: permissions.mask(&definition.permissions),
                    tool,
                    definition,
                    offered,
                    name,
                    validator,
                    tenants,
                }
            })
            .collect();
        ToolRegistry {
            tools,
            index,
            mcp_servers,
            permissions,
            propose,
            agents,
            enablement: Arc::new(EnablementCache::new(enablement, self.caching)),
            policy: self.policy,
            naming: self.naming,
        }
    }
}

/// The registry of governed tools; implements [`AiToolRegistry`].
///
/// `list` and `find` show a caller only tools they may call: the agent's scope (its
/// `allowed_tools` or MCP servers, and the tool's `allowed_agents`), a tenant for tools that
/// need one, every required permission among the caller's permissions narrowed by the
/// agent's, the mutability and danger policy, and enablement for the caller's tenant (read
/// per call, or once per change: [`EnablementCaching`]). Lists are sorted by name.
pub struct ToolRegistry {
    tools: Vec<RegisteredTool>,
    index: NameMap<String, usize>,
    mcp_servers: HashMap<String, Vec<usize>>,
    permissions: PermissionIndex,
    propose: PermissionMask,
    agents: Arc<AgentRegistry>,
    enablement: Arc<EnablementCache>,
    policy: ToolPolicy,
    naming: ToolNaming,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.tools.len())
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// Whether a caller may call one tool, and if not, why ([`ToolRegistry::availability`]).
#[derive(Debug)]
pub struct ToolAvailability<'a> {
    /// The tool.
    pub tool: &'a RegisteredTool,
    /// Every condition the caller does not meet; empty when they may call it.
    pub unmet: Vec<ToolUnavailable>,
}

impl ToolAvailability<'_> {
    /// Whether the caller may call the tool.
    pub fn is_available(&self) -> bool {
        self.unmet.is_empty()
    }
}

/// One reason a caller may not call a tool.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolUnavailable {
    /// The agent's scope does not name the tool, or the tool does not admit the agent.
    OutsideAgentScope {
        /// The agent.
        agent: String,
    },
    /// The tool works on a tenant's data and the caller acts in none.
    NoTenant,
    /// The caller (narrowed by the agent) lacks these permissions.
    MissingPermissions(Vec<Permission>),
    /// The host's mutability and danger policy refuses the tool (the sentence says how).
    Policy(String),
    /// The tool is not enabled for the caller's tenant (and agent).
    NotEnabled,
}

impl std::fmt::Display for ToolUnavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::OutsideAgentScope { agent } => write!(f, "not available to agent '{agent}'"),
            Self::NoTenant => f.write_str("needs a tenant"),
            Self::MissingPermissions(missing) => {
                let names: Vec<&str> = missing.iter().map(Permission::as_str).collect();
                write!(f, "needs {}", names.join(", "))
            }
            Self::Policy(sentence) => f.write_str(sentence),
            Self::NotEnabled => f.write_str("not enabled by an administrator"),
        }
    }
}

/// Whether the viewer's agent, if any, has the tool in scope (by either name) and the tool
/// admits the agent.
fn in_agent_scope(tool: &RegisteredTool, viewer: &Viewer<'_>) -> bool {
    viewer.agent.is_none_or(|agent| {
        tool.named_by(agent) && tool_admits_agent(&tool.definition, &agent.name)
    })
}

/// Whether the viewer acts in a tenant, when the tool needs one.
fn has_tenant(definition: &AiToolDefinition, viewer: &Viewer<'_>) -> bool {
    !requires_tenant(definition) || !viewer.caller.tenant_id.as_str().is_empty()
}

/// Whether the tool is enabled for the viewer's tenant and agent.
fn is_enabled(definition: &AiToolDefinition, viewer: &Viewer<'_>) -> bool {
    viewer
        .decisions
        .is_enabled(definition, viewer.agent.map(|a| a.name.as_str()))
}

/// What a filtered lookup knows about the caller, computed once per call.
struct Viewer<'a> {
    caller: &'a AiCaller,
    agent: Option<&'a AiAgentDefinition>,
    held: PermissionMask,
    may_propose: bool,
    decisions: Arc<EnablementDecisions>,
}

impl ToolRegistry {
    /// A builder without tools.
    pub fn builder() -> ToolRegistryBuilder {
        ToolRegistryBuilder::default()
    }

    /// The registered tool of that name (canonical or grounding), unfiltered: for governance
    /// and administration, never for showing tools to a model.
    pub fn registered(&self, name: &str) -> Option<&RegisteredTool> {
        self.index.get(name).map(|&i| &self.tools[i])
    }

    /// The registered tool of that name if it exists for `tenant` (see
    /// [`RegisteredTool::serves`]); otherwise unfiltered like [`ToolRegistry::registered`].
    pub fn registered_for(&self, name: &str, tenant: &TenantId) -> Option<&RegisteredTool> {
        self.registered(name).filter(|tool| tool.serves(tenant))
    }

    /// Every registered tool, sorted by name, unfiltered (administration screens).
    pub fn iter(&self) -> impl Iterator<Item = &RegisteredTool> {
        self.tools.iter()
    }

    /// Every tool that exists for `tenant`, sorted by name (a tenant's administration
    /// screen).
    pub fn iter_for<'a>(
        &'a self,
        tenant: &'a TenantId,
    ) -> impl Iterator<Item = &'a RegisteredTool> {
        self.tools.iter().filter(move |tool| tool.serves(tenant))
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The agents the registry scopes tools by.
    pub fn agents(&self) -> &Arc<AgentRegistry> {
        &self.agents
    }

    /// The enablement store the registry reads; a change written through it applies to the
    /// registry at once.
    pub fn enablement(&self) -> Arc<dyn AiToolEnablementStore> {
        self.enablement.clone()
    }

    /// The tenant's enablement decisions, as [`EnablementCaching`] keeps them.
    pub async fn decisions(
        &self,
        tenant_id: &TenantId,
    ) -> Result<Arc<EnablementDecisions>, AiError> {
        self.enablement.decisions(tenant_id).await
    }

    /// Tells the registry that the decisions of `tenant_id` (or of every tenant, `None`)
    /// were changed other than through [`enablement`](Self::enablement): another process
    /// sharing the store changed them, or its announcements may have been missed.
    pub fn enablement_changed(&self, tenant_id: Option<&TenantId>) {
        self.enablement.changed(tenant_id);
    }

    /// The mutability and danger policy.
    pub fn policy(&self) -> &ToolPolicy {
        &self.policy
    }

    /// Which spelling of their names tools are listed under.
    pub fn naming(&self) -> ToolNaming {
        self.naming
    }

    async fn viewer<'a>(&'a self, query: &'a AiToolQuery) -> Result<Viewer<'a>, AiError> {
        let agent = query
            .agent
            .as_deref()
            .map(|name| self.agents.resolve(name))
            .transpose()?;
        let held = match agent {
            Some(agent) => self
                .permissions
                .mask(&AgentRegistry::effective_permissions(&query.caller, agent)),
            None => self.permissions.mask(&query.caller.permissions),
        };
        let decisions = self.enablement.decisions(&query.caller.tenant_id).await?;
        Ok(Viewer {
            caller: &query.caller,
            agent,
            may_propose: held.contains_all(&self.propose),
            held,
            decisions,
        })
    }

    fn visible(&self, tool: &RegisteredTool, viewer: &Viewer<'_>, query: &AiToolQuery) -> bool {
        let definition = &tool.definition;
        tool.serves(&viewer.caller.tenant_id)
            && query.mutability.is_none_or(|m| m == definition.mutability)
            && query
                .danger_level
                .is_none_or(|d| d == definition.danger_level)
            && in_agent_scope(tool, viewer)
            && has_tenant(definition, viewer)
            && viewer.held.contains_all(&tool.required)
            && self.policy.admits(definition, viewer.may_propose)
            && is_enabled(definition, viewer)
    }

    /// Whether the query's caller may call each of the tools named (by either name), and if
    /// not, every condition that stops them: the same conditions [`AiToolRegistry::list`]
    /// applies, for telling a person why a tool is not available. `None` for a name no tool
    /// of the caller's tenant answers to. One enablement read for all of them.
    pub async fn availability<'a>(
        &'a self,
        names: &[&str],
        query: &AiToolQuery,
    ) -> Result<Vec<Option<ToolAvailability<'a>>>, AiError> {
        let viewer = self.viewer(query).await?;
        let held = match viewer.agent {
            Some(agent) => AgentRegistry::effective_permissions(&query.caller, agent),
            None => query.caller.permissions.clone(),
        };
        Ok(names
            .iter()
            .map(|name| {
                let tool = self.registered_for(name, &query.caller.tenant_id)?;
                let definition = &tool.definition;
                let mut unmet = Vec::new();
                if let Some(agent) = viewer.agent
                    && !in_agent_scope(tool, &viewer)
                {
                    unmet.push(ToolUnavailable::OutsideAgentScope {
                        agent: agent.name.clone(),
                    });
                }
                if !has_tenant(definition, &viewer) {
                    unmet.push(ToolUnavailable::NoTenant);
                }
                let missing: Vec<Permission> = definition
                    .permissions
                    .iter()
                    .filter(|p| !held.contains(*p))
                    .cloned()
                    .collect();
                if !missing.is_empty() {
                    unmet.push(ToolUnavailable::MissingPermissions(missing));
                }
                if let Err(refusal) = self.policy.check(definition, &held) {
                    // A missing propose permission is already listed above when the tool
                    // names it; the policy's other refusals are its own.
                    if !(refusal.code() == "permission_denied"
                        && definition
                            .permissions
                            .contains(&Permission::PROPOSE_WORKFLOWS))
                    {
                        unmet.push(ToolUnavailable::Policy(refusal.message().to_owned()));
                    }
                }
                if !is_enabled(definition, &viewer) {
                    unmet.push(ToolUnavailable::NotEnabled);
                }
                Some(ToolAvailability { tool, unmet })
            })
            .collect())
    }

    /// The tools `viewer` may call that match the query's filters, in name order.
    fn visible_tools<'a>(
        &'a self,
        viewer: &'a Viewer<'a>,
        query: &'a AiToolQuery,
    ) -> Box<dyn Iterator<Item = &'a RegisteredTool> + 'a> {
        let visible = move |tool: &&RegisteredTool| self.visible(tool, viewer, query);
        match viewer.agent {
            Some(agent) => Box::new(
                self.scope_of(agent)
                    .into_iter()
                    .map(|i| &self.tools[i])
                    .filter(visible),
            ),
            None => Box::new(self.tools.iter().filter(visible)),
        }
    }

    /// Indices of the tools an agent's scope names, in name order.
    fn scope_of(&self, agent: &AiAgentDefinition) -> Vec<usize> {
        let mut indices: Vec<usize> = agent
            .allowed_tools
            .iter()
            .filter_map(|name| self.index.get(name).copied())
            .chain(
                agent
                    .allowed_mcp_servers
                    .iter()
                    .filter_map(|server| self.mcp_servers.get(server))
                    .flatten()
                    .copied(),
            )
            .collect();
        indices.sort_unstable();
        indices.dedup();
        indices
    }
}

#[async_trait]
impl AiToolRegistry for ToolRegistry {
    async fn list(&self, query: &AiToolQuery) -> Result<Vec<Arc<AiToolDefinition>>, AiError> {
        let viewer = self.viewer(query).await?;
        Ok(self
            .visible_tools(&viewer, query)
            .map(|t| t.offered.clone())
            .collect())
    }

    async fn find(
        &self,
        name: &str,
        query: &AiToolQuery,
    ) -> Result<Option<Arc<dyn AiTool>>, AiError> {
        let Some(tool) = self.registered(name) else {
            return Ok(None);
        };
        let viewer = self.viewer(query).await?;
        Ok(self
            .visible(tool, &viewer, query)
            .then(|| tool.tool.clone()))
    }
}
