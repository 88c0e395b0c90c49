//! Step 6: permissions and ownership.

use elsa_ai_abstractions::{AiConversationStore, AiError, AiToolDefinition, ConversationId};
use tokio::sync::OnceCell;

use super::AgentScope;

/// Every permission the tool requires must be among the caller's permissions narrowed by
/// the agent's (403 `permission_denied`, naming the permission and whether the caller or the
/// agent lacks it). When the call belongs to a conversation and the governor has a
/// conversation store, the caller must own that conversation in their tenant; another
/// actor's or tenant's conversation is reported like a missing one (404
/// `conversation_not_found`). Ownership is checked once per bound turn.
#[derive(Clone, Copy)]
pub(crate) struct CheckPermissions<'r> {
    pub conversations: Option<&'r dyn AiConversationStore>,
}

impl CheckPermissions<'_> {
    pub async fn run(
        &self,
        scope: &AgentScope<'_>,
        definition: &AiToolDefinition,
        conversation: Option<&ConversationId>,
        ownership: &OnceCell<Result<(), AiError>>,
    ) -> Result<(), AiError> {
        if let Some(missing) = definition
            .permissions
            .iter()
            .find(|p| !scope.permissions().contains(p))
        {
            let who = if scope.actor.caller.has(missing) {
                format!("agent '{}' does not allow it", scope.agent.name)
            } else {
                "the caller does not hold it".to_owned()
            };
            return Err(AiError::forbidden(
                "permission_denied",
                format!("tool '{}' requires '{missing}' and {who}", definition.name),
            ));
        }
        let (Some(store), Some(conversation)) = (self.conversations, conversation) else {
            return Ok(());
        };
        ownership
            .get_or_init(|| async {
                let caller = scope.actor.caller;
                match store.find(conversation, &caller.tenant_id).await? {
                    Some(found) if found.owner_id == caller.actor_id => Ok(()),
                    _ => Err(AiError::NotFound {
                        code: "conversation_not_found".into(),
                        message: format!("conversation '{conversation}' not found"),
                    }),
                }
            })
            .await
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use elsa_ai_abstractions::{AiCaller, Permission};

    use super::*;
    use crate::governor::steps::scope_for;
    use crate::testing::governance::{GovernanceHarness, RecordingConversations, read_tool};

    #[tokio::test]
    async fn a_missing_permission_is_named_with_who_lacks_it() {
        let mut tool = read_tool("demo.instances");
        tool.permissions = vec![Permission::READ_WORKFLOW_INSTANCES];
        let harness = GovernanceHarness::builder()
            .definition(tool.clone())
            .agent_permissions(&[Permission::READ_WORKFLOWS])
            .build();
        let step = CheckPermissions {
            conversations: None,
        };
        let once = OnceCell::new();

        let lacking = AiCaller::new("bob", "acme", [Permission::READ_WORKFLOWS]);
        let error = step
            .run(&scope_for(&harness, &lacking), &tool, None, &once)
            .await
            .unwrap_err();
        assert_eq!((error.status(), error.code()), (403, "permission_denied"));
        assert!(
            error.message().contains("caller does not hold"),
            "{}",
            error.message()
        );

        // Holding it is not enough when the agent does not allow it: agents only narrow.
        let holder = AiCaller::new(
            "alice",
            "acme",
            [
                Permission::READ_WORKFLOWS,
                Permission::READ_WORKFLOW_INSTANCES,
            ],
        );
        let error = step
            .run(&scope_for(&harness, &holder), &tool, None, &once)
            .await
            .unwrap_err();
        assert!(
            error
                .message()
                .contains("agent 'test-agent' does not allow"),
            "{}",
            error.message()
        );
    }

    #[tokio::test]
    async fn only_the_owner_may_use_a_conversation_and_it_is_checked_once() {
        let harness = GovernanceHarness::builder()
            .definition(read_tool("demo.read"))
            .build();
        let conversations = RecordingConversations::default();
        conversations.insert("acme", "alice", "c1");
        let step = CheckPermissions {
            conversations: Some(&conversations),
        };
        let tool = read_tool("demo.read");
        let owner = harness.caller();
        let once = OnceCell::new();
        let id = ConversationId::new("c1");
        step.run(&scope_for(&harness, &owner), &tool, Some(&id), &once)
            .await
            .unwrap();
        step.run(&scope_for(&harness, &owner), &tool, Some(&id), &once)
            .await
            .unwrap();
        assert_eq!(conversations.finds(), 1, "memoised per turn");

        let intruder = AiCaller {
            actor_id: "mallory".into(),
            ..owner.clone()
        };
        let error = step
            .run(
                &scope_for(&harness, &intruder),
                &tool,
                Some(&id),
                &OnceCell::new(),
            )
            .await
            .unwrap_err();
        assert_eq!(
            (error.status(), error.code()),
            (404, "conversation_not_found")
        );
        let other_tenant = AiCaller {
            tenant_id: "globex".into(),
            ..owner
        };
        let error = step
            .run(
                &scope_for(&harness, &other_tenant),
                &tool,
                Some(&id),
                &OnceCell::new(),
            )
            .await
            .unwrap_err();
        assert_eq!(
            error.status(),
            404,
            "another tenant's conversation looks missing"
        );
    }
}
