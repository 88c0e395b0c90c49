//! Server-Sent Events read the way a browser's `EventSource` reads them (the WHATWG
//! "interpret an event stream" algorithm): lines end in CRLF, LF or CR; `field: value` with
//! one optional space; `data` lines are joined with `\n`; comments (`:`) are ignored; a blank
//! line dispatches the event, unless it has no data.

use bytes::Bytes;
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

/// Turns bytes into events, incrementally.
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: Vec<u8>,
    /// A CR ended the last line; an LF right after it belongs to that line end.
    after_cr: bool,
    event: String,
    data: String,
    last_id: Option<String>,
    /// Comment lines seen (keep-alives).
    pub comments: usize,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the events they completed.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &byte in bytes {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' => self.line(&mut events),
                b'\r' => {
                    self.after_cr = true;
                    self.line(&mut events);
                }
                _ => self.buffer.push(byte),
            }
        }
        events
    }

    fn line(&mut self, events: &mut Vec<SseEvent>) {
        let line = String::from_utf8_lossy(&std::mem::take(&mut self.buffer)).into_owned();
        if line.is_empty() {
            if !self.data.is_empty() {
                let mut data = std::mem::take(&mut self.data);
                data.pop(); // the last "\n"
                let event = std::mem::take(&mut self.event);
                events.push(SseEvent {
                    event: if event.is_empty() {
                        "message".into()
                    } else {
                        event
                    },
                    id: self.last_id.clone(),
                    data,
                });
            }
            self.event.clear();
            return;
        }
        if line.starts_with(':') {
            self.comments += 1;
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_str(), ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
            }
            "id" if !value.contains('\0') => self.last_id = Some(value.to_owned()),
            // `retry` and unknown fields do not change the events.
            _ => {}
        }
    }
}

/// A response body read as events.
pub struct SseStream {
    body: futures::stream::BoxStream<'static, Result<Bytes, reqwest::Error>>,
    parser: SseParser,
    ready: std::collections::VecDeque<SseEvent>,
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
            body: bytes.boxed(),
            parser: SseParser::new(),
            ready: Default::default(),
        }
    }

    /// The next event; `None` when the stream ended (or failed).
    pub async fn next_event(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            let chunk = self.body.next().await?.ok()?;
            self.ready.extend(self.parser.feed(&chunk));
        }
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

    #[test]
    fn events_are_parsed_as_a_browser_does() {
        let mut parser = SseParser::new();
        let stream = b": keep-alive\nevent: tool.started\nid: 4\ndata: {\"a\":\ndata:1}\n\n\
                       data: plain\r\n\r\nevent: x\nid: 5\n\nevent:conversation.completed\rid:6\rdata:{}\r\r";
        // Fed in awkward pieces, as TCP delivers them.
        let mut events = Vec::new();
        for chunk in stream.chunks(3) {
            events.extend(parser.feed(chunk));
        }
        assert_eq!(parser.comments, 1);
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
