//! Server-Sent Events read the way a browser's `EventSource` reads them (the WHATWG
//! "interpret an event stream" algorithm, as `eventsource-stream` implements it): lines end
//! in CRLF, LF or CR; `field: value` with one optional space; `data` lines are joined with
//! `\n`; comments (`:`) are ignored; a blank line dispatches the event, unless it has no data.

use bytes::Bytes;
use eventsource_stream::{EventStream, Eventsource};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use serde_json::Value;

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The event name (`message` when the stream named none).
    pub event: String,
    /// The last event id seen so far on the stream (browsers carry it over).
    pub id: Option<String>,
    /// The data lines, joined with `\n`.
    pub data: String,
}

impl SseEvent {
    /// The data parsed as JSON.
    ///
    /// # Panics
    ///
    /// When the data is not JSON: the server sends JSON only.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("event data is not JSON ({e}): {}", self.data))
    }

    /// The id as a sequence number.
    ///
    /// # Panics
    ///
    /// When the event has no numeric id.
    pub fn sequence(&self) -> u64 {
        self.id
            .as_deref()
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("event has no numeric id: {self:?}"))
    }
}

/// A response body read as events.
pub struct SseStream {
    events: EventStream<BoxStream<'static, Result<Bytes, reqwest::Error>>>,
    /// The last event id seen (browsers carry it over to events that name none).
    last_id: Option<String>,
}

impl std::fmt::Debug for SseStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseStream").finish_non_exhaustive()
    }
}

impl SseStream {
    /// Reads `response`'s body as an event stream.
    pub fn new(response: reqwest::Response) -> Self {
        Self::from_bytes(response.bytes_stream())
    }

    /// Reads any byte stream as an event stream.
    pub fn from_bytes(
        bytes: impl Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
    ) -> Self {
        Self {
            events: bytes.boxed().eventsource(),
            last_id: None,
        }
    }

    /// The next event; `None` when the stream ended (or failed).
    pub async fn next_event(&mut self) -> Option<SseEvent> {
        let event = self.events.next().await?.ok()?;
        if !event.id.is_empty() {
            self.last_id = Some(event.id);
        }
        Some(SseEvent {
            event: event.event,
            id: self.last_id.clone(),
            data: event.data,
        })
    }

    /// Every remaining event.
    pub async fn collect(mut self) -> Vec<SseEvent> {
        let mut events = Vec::new();
        while let Some(event) = self.next_event().await {
            events.push(event);
        }
        events
    }

    /// Events until (and including) the first whose name is in `names`.
    pub async fn until(&mut self, names: &[&str]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        while let Some(event) = self.next_event().await {
            let last = names.contains(&event.event.as_str());
            events.push(event);
            if last {
                break;
            }
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn events_are_parsed_as_a_browser_does() {
        let stream: &'static [u8] = b": keep-alive\nevent: tool.started\nid: 4\ndata: {\"a\":\ndata:1}\n\n\
                       data: plain\r\n\r\nevent: x\nid: 5\n\nevent:conversation.completed\rid:6\rdata:{}\r\r: end\n";
        // Fed in awkward pieces, as TCP delivers them. (A lone CR at the very end of a stream
        // is held back until the next byte says whether an LF follows, so the CR-terminated
        // event is followed by a comment.)
        let chunks: Vec<Result<Bytes, reqwest::Error>> = stream
            .chunks(3)
            .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
            .collect();
        let events = SseStream::from_bytes(futures::stream::iter(chunks))
            .collect()
            .await;
        assert_eq!(
            events,
            [
                SseEvent {
                    event: "tool.started".into(),
                    id: Some("4".into()),
                    data: "{\"a\":\n1}".into()
                },
                SseEvent {
                    event: "message".into(),
                    id: Some("4".into()),
                    data: "plain".into()
                },
                SseEvent {
                    event: "conversation.completed".into(),
                    id: Some("6".into()),
                    data: "{}".into()
                },
            ],
            "an event without data is not dispatched, but its id is kept"
        );
        assert_eq!(events[0].json()["a"], 1);
        assert_eq!(events[2].sequence(), 6);
    }
}
