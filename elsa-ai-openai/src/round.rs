//! What both APIs share: the conversation sent to the model as API-neutral items, the
//! tool calls assembled from streamed fragments, and what one model request produced.

use std::collections::HashMap;

use elsa_ai_abstractions::AiProviderEvent;
use tokio::sync::mpsc;

use crate::client::ModelError;

/// One entry of the conversation a request carries.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Item {
    /// The agent's instructions.
    System(String),
    /// A person's message (with the turn's attachments before it, for the current one).
    User(String),
    /// An earlier answer of the assistant.
    Assistant(String),
    /// The model's request for tool calls, with any text it wrote before them.
    Calls { text: String, calls: Vec<ModelCall> },
    /// A tool's result, as the model reads it.
    Result { call_id: String, output: String },
}

/// A tool call the model asked for, assembled from its fragments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ModelCall {
    /// The call id (the model's, or one made up when the server sent none).
    pub id: String,
    /// The function name, as the model wrote it.
    pub name: String,
    /// The arguments, as the JSON text the model wrote.
    pub arguments: String,
}

/// What one model request produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RoundOutput {
    /// The assistant text, whole.
    pub text: String,
    /// The tool calls, in the order the model made them.
    pub calls: Vec<ModelCall>,
    /// Input and output tokens, when the endpoint reported them.
    pub usage: Option<(u64, u64)>,
}

/// Sends a turn's events to the host; a closed channel means the host let the turn go.
#[derive(Clone)]
pub(crate) struct Reporter(pub mpsc::Sender<AiProviderEvent>);

impl Reporter {
    pub(crate) async fn send(&self, event: AiProviderEvent) -> Result<(), ModelError> {
        self.0.send(event).await.map_err(|_| ModelError::Cancelled)
    }

    /// Reports a piece of assistant text as it streams in.
    pub(crate) async fn delta(
        &self,
        output: &mut RoundOutput,
        text: &str,
    ) -> Result<(), ModelError> {
        if text.is_empty() {
            return Ok(());
        }
        output.text.push_str(text);
        self.send(AiProviderEvent::AssistantDelta {
            text: text.to_owned(),
        })
        .await
    }
}

/// Tool calls under construction, keyed by what the API uses to address a call's fragments
/// (an index, an output index or an item id).
#[derive(Debug, Default)]
pub(crate) struct CallAssembler {
    calls: Vec<PartialCall>,
    by_key: HashMap<String, usize>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

impl CallAssembler {
    /// Adds a fragment. A fragment naming an id other than the one its key's call already
    /// has starts a new call (servers that reuse index 0 for every call of a chunk).
    pub(crate) fn fragment(
        &mut self,
        key: &str,
        id: Option<&str>,
        name: Option<&str>,
        arguments: Option<&str>,
    ) {
        let id = id.filter(|id| !id.is_empty());
        let index = match self.by_key.get(key) {
            Some(&index) if !matches!((id, self.calls[index].id.as_deref()), (Some(new), Some(old)) if new != old) => {
                index
            }
            _ => {
                self.calls.push(PartialCall::default());
                self.by_key.insert(key.to_owned(), self.calls.len() - 1);
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[index];
        if let Some(id) = id {
            call.id = Some(id.to_owned());
        }
        if let Some(name) = name.filter(|name| !name.is_empty()) {
            // A name arrives whole in one fragment; some servers repeat it in later ones.
            if call.name.is_empty() {
                call.name = name.to_owned();
            }
        }
        if let Some(arguments) = arguments {
            call.arguments.push_str(arguments);
        }
    }

    /// Replaces a call's arguments with the whole text the server sent at its end.
    pub(crate) fn complete_arguments(&mut self, key: &str, arguments: &str) {
        if let Some(&index) = self.by_key.get(key) {
            arguments.clone_into(&mut self.calls[index].arguments);
        }
    }

    /// Whether any call has started.
    pub(crate) fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The finished calls; a call without an id gets `call_<turn>_<n>` from `next_id`, a call
    /// without a name is a protocol error.
    pub(crate) fn finish(
        self,
        mut next_id: impl FnMut() -> String,
    ) -> Result<Vec<ModelCall>, ModelError> {
        self.calls
            .into_iter()
            .map(|call| {
                if call.name.is_empty() {
                    return Err(ModelError::Protocol(
                        "a tool call arrived without a function name".to_owned(),
                    ));
                }
                Ok(ModelCall {
                    id: call.id.unwrap_or_else(&mut next_id),
                    name: call.name,
                    arguments: call.arguments,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids() -> impl FnMut() -> String {
        let mut n = 0;
        move || {
            n += 1;
            format!("gen_{n}")
        }
    }

    #[test]
    fn fragments_join_by_key_and_missing_ids_are_made_up() {
        let mut calls = CallAssembler::default();
        calls.fragment("0", Some("call_a"), Some("echo"), Some("{\"te"));
        calls.fragment("1", None, Some("other"), Some("{}"));
        calls.fragment("0", None, None, Some("xt\":1}"));
        let calls = calls.finish(ids()).unwrap();
        assert_eq!(
            calls,
            [
                ModelCall {
                    id: "call_a".into(),
                    name: "echo".into(),
                    arguments: "{\"text\":1}".into()
                },
                ModelCall {
                    id: "gen_1".into(),
                    name: "other".into(),
                    arguments: "{}".into()
                },
            ]
        );
    }

    #[test]
    fn a_new_id_under_a_used_key_is_a_new_call() {
        let mut calls = CallAssembler::default();
        calls.fragment("0", Some("a"), Some("one"), Some("{}"));
        calls.fragment("0", Some("b"), Some("two"), Some("{\"x\":"));
        calls.fragment("0", None, None, Some("2}"));
        let calls = calls.finish(ids()).unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].arguments, "{\"x\":2}");
    }

    #[test]
    fn whole_arguments_replace_the_pieces_and_a_nameless_call_is_refused() {
        let mut calls = CallAssembler::default();
        calls.fragment("fc_1", Some("c"), Some("echo"), Some("{\"a\""));
        calls.complete_arguments("fc_1", "{\"a\":1}");
        assert_eq!(calls.finish(ids()).unwrap()[0].arguments, "{\"a\":1}");
        let mut nameless = CallAssembler::default();
        nameless.fragment("0", Some("c"), None, Some("{}"));
        assert!(matches!(
            nameless.finish(ids()),
            Err(ModelError::Protocol(_))
        ));
    }
}
