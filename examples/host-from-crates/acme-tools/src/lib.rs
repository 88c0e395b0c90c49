//! Acme's own Weaver tools, and the agent that uses them.
//!
//! A host gets the tools by linking this crate (`use acme_tools as _;`): each one registers
//! itself with `inventory` ([`AiToolRegistration`]), and the server's tool registry collects
//! every linked tool and governs its calls exactly like a built-in one (permissions, agent
//! scope, enablement, redaction, audit). Agents cannot register themselves that way, so the
//! host adds [`order_desk_agent`] through `WeaverBuilder::agent`.
//!
//! - `acme.orderStatus` (read-only, `read:orders`): an order's status, customer and amount,
//!   from Acme's order book (a small table in this crate), only for the caller's tenant.

use elsa_ai_abstractions::{
    AiAgentDefinition, AiError, AiToolDefinition, AiToolExecutionContext, AiToolRegistration,
    AttachmentKind, Permission, tool_fn,
};
use serde::Deserialize;
use serde_json::{Value, json};

/// The name of the order-status tool.
pub const ORDER_STATUS: &str = "acme.orderStatus";

/// The name of the agent allowed to use Acme's tools.
pub const ORDER_DESK: &str = "order-desk";

/// Acme's own permission: reading orders. Weaver knows nothing of it; callers get it from
/// the host's identity (an API key's or a token's permissions).
pub const READ_ORDERS: Permission = Permission::from_static("read:orders");

/// One order of the order book.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Order {
    /// The tenant the order belongs to.
    pub tenant: &'static str,
    /// The order number, such as `ORD-1002`.
    pub id: &'static str,
    /// The customer.
    pub customer: &'static str,
    /// Where the order stands.
    pub status: &'static str,
    /// The total, in cents.
    pub amount_cents: u64,
    /// The currency of the total.
    pub currency: &'static str,
}

/// Acme's order book.
pub const ORDERS: &[Order] = &[
    Order {
        tenant: "acme",
        id: "ORD-1001",
        customer: "Globex",
        status: "shipped",
        amount_cents: 84_000,
        currency: "EUR",
    },
    Order {
        tenant: "acme",
        id: "ORD-1002",
        customer: "Initech",
        status: "awaiting approval",
        amount_cents: 1_250_000,
        currency: "EUR",
    },
    Order {
        tenant: "umbrella",
        id: "ORD-2001",
        customer: "Wayne",
        status: "delivered",
        amount_cents: 9_900,
        currency: "USD",
    },
];

/// The arguments of `acme.orderStatus`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OrderStatusInput {
    order_id: String,
}

fn order_status_definition() -> AiToolDefinition {
    AiToolDefinition {
        display_name: "Order status".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "orderId": {"type": "string", "pattern": "^ORD-[0-9]{1,10}$",
                            "description": "The order number, such as ORD-1002."}
            },
            "required": ["orderId"],
            "additionalProperties": false
        }),
        allowed_agents: Some(vec![ORDER_DESK.into()]),
        ..AiToolDefinition::read_only(
            ORDER_STATUS,
            "Reads an Acme order by its number: status, customer and total.",
            [READ_ORDERS],
        )
    }
}

/// Finds the order in the caller's tenant; another tenant's order is not found, like one
/// that does not exist.
async fn order_status(context: AiToolExecutionContext) -> Result<Value, AiError> {
    let input: OrderStatusInput = context.arguments()?;
    let tenant = context.caller.tenant_id.as_str();
    let order = ORDERS
        .iter()
        .find(|order| order.tenant == tenant && order.id == input.order_id)
        .ok_or_else(|| AiError::not_found(format!("order '{}'", input.order_id)))?;
    let total = format!(
        "{}.{:02} {}",
        order.amount_cents / 100,
        order.amount_cents % 100,
        order.currency
    );
    Ok(json!({
        "summary": format!("Order {} for {} ({total}) is {}.", order.id, order.customer, order.status),
        "orderId": order.id,
        "customer": order.customer,
        "status": order.status,
        "total": total,
        "evidence": [format!("order:{}", order.id)],
    }))
}

elsa_ai_abstractions::inventory::submit! {
    AiToolRegistration::new(|| tool_fn(order_status_definition(), order_status))
}

/// `order-desk`: answers about Acme orders and notes them on workflows as proposals. Its
/// permissions only narrow the caller's.
pub fn order_desk_agent() -> AiAgentDefinition {
    AiAgentDefinition {
        display_name: "Order desk".into(),
        allowed_tools: vec![
            ORDER_STATUS.into(),
            "workflow.getDefinition".into(),
            "workflow.proposeUpdate".into(),
        ],
        allowed_context_providers: vec![AttachmentKind::WorkflowDefinition],
        permissions: vec![
            READ_ORDERS,
            Permission::READ_WORKFLOWS,
            Permission::PROPOSE_WORKFLOWS,
        ],
        ..AiAgentDefinition::new(
            ORDER_DESK,
            "You answer questions about Acme orders with acme.orderStatus, and note what you \
             found on the attached workflow as a proposal a person reviews.",
        )
    }
}
