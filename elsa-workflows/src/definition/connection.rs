//! Flowchart connections, read from any of the shapes Elsa has written and exposed in one
//! normalised form.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::ParseError;
use crate::json::{self, Seg};

/// The port a connection leaves from when the JSON names none.
pub const DEFAULT_SOURCE_PORT: &str = "Done";
/// The port a connection enters when the JSON names none.
pub const DEFAULT_TARGET_PORT: &str = "In";

/// One end of a connection: an activity and a port.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// The activity id.
    pub activity: String,
    /// The port (outcome) name.
    pub port: String,
}

impl Endpoint {
    /// An endpoint at `activity` through `port`.
    pub fn new(activity: impl Into<String>, port: impl Into<String>) -> Self {
        Self {
            activity: activity.into(),
            port: port.into(),
        }
    }
}

/// How a connection was written in the JSON.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ConnectionShape {
    /// `{"source": {"activity", "port"}, "target": {"activity", "port"}}` (Elsa 3.1 and later).
    #[default]
    Endpoints,
    /// `{"source": "id", "target": "id", "sourcePort", "targetPort"}` (early Elsa 3).
    Flat,
}

impl ConnectionShape {
    /// The JSON of a connection in this shape.
    pub fn write(self, source: &Endpoint, target: &Endpoint) -> Value {
        match self {
            Self::Endpoints => json!({
                "source": { "activity": source.activity, "port": source.port },
                "target": { "activity": target.activity, "port": target.port },
            }),
            Self::Flat => json!({
                "source": source.activity,
                "target": target.activity,
                "sourcePort": source.port,
                "targetPort": target.port,
            }),
        }
    }
}

/// A flowchart connection, normalised: source activity + port → target activity + port.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    /// Where the connection leaves.
    pub source: Endpoint,
    /// Where the connection enters.
    pub target: Endpoint,
    /// How the JSON spelled it.
    pub shape: ConnectionShape,
    /// JSON path of the connection object.
    pub path: String,
    /// JSON path of the value naming the source port (the source itself when no port is written).
    #[serde(skip)]
    pub(crate) source_port_path: String,
    /// Index of the connection in its list.
    #[serde(skip)]
    pub(crate) index: usize,
}

impl Connection {
    /// Whether both connections link the same endpoints.
    pub fn links(&self, source: &Endpoint, target: &Endpoint) -> bool {
        &self.source == source && &self.target == target
    }
}

/// Reads the `connections` of a container object. `strict` turns malformed entries into
/// errors; otherwise they are skipped.
pub(crate) fn read_all(
    container: &Map<String, Value>,
    location: &[Seg],
    strict: bool,
) -> Result<Vec<Connection>, ParseError> {
    let Some((items, list_location)) = json::optional_array(container, "connections", location)
        .or_else(|error| if strict { Err(error) } else { Ok(None) })?
    else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = json::index(&list_location, i);
        match read_one(item, &at, i) {
            Ok(Some(connection)) => out.push(connection),
            Ok(None) => {}
            Err(error) if strict => return Err(error),
            Err(_) => {}
        }
    }
    Ok(out)
}

/// One connection; `None` for a `$ref` back-reference (the object it names was read where it
/// first appeared).
fn read_one(item: &Value, at: &[Seg], index: usize) -> Result<Option<Connection>, ParseError> {
    let map = json::expect_object(item, at, "a connection")?;
    if map.contains_key("$ref") {
        return Ok(None);
    }
    let (source, source_port_path, source_shape) =
        read_end(map, at, "source", "sourcePort", DEFAULT_SOURCE_PORT)?;
    let (target, _, _) = read_end(map, at, "target", "targetPort", DEFAULT_TARGET_PORT)?;
    Ok(Some(Connection {
        source,
        target,
        shape: source_shape,
        path: json::render_path(at),
        source_port_path,
        index,
    }))
}

fn read_end(
    map: &Map<String, Value>,
    at: &[Seg],
    field: &str,
    port_field: &str,
    default_port: &str,
) -> Result<(Endpoint, String, ConnectionShape), ParseError> {
    let field_at = json::key(at, field);
    let flat_port = json::optional_str(map, port_field, at)?;
    match map.get(field) {
        Some(Value::String(activity)) => {
            let port_path = if flat_port.is_some() {
                json::render_path(&json::key(at, port_field))
            } else {
                json::render_path(&field_at)
            };
            Ok((
                Endpoint::new(activity.as_str(), flat_port.unwrap_or(default_port)),
                port_path,
                ConnectionShape::Flat,
            ))
        }
        Some(Value::Object(end)) => {
            let activity = match end.get("activity") {
                Some(Value::String(activity)) => activity,
                Some(other) => {
                    return Err(json::error_at(
                        &json::key(&field_at, "activity"),
                        format!(
                            "connection {field} `activity` must be a string, found {}",
                            json::kind_of(other)
                        ),
                    ));
                }
                None => {
                    return Err(json::error_at(
                        &json::key(&field_at, "activity"),
                        format!("connection {field} has no `activity`"),
                    ));
                }
            };
            let port = json::optional_str(end, "port", &field_at)?;
            let (port, port_path) = match (port, flat_port) {
                (Some(port), _) => (port, json::key(&field_at, "port")),
                (None, Some(port)) => (port, json::key(at, port_field)),
                (None, None) => (default_port, field_at.clone()),
            };
            Ok((
                Endpoint::new(activity.as_str(), port),
                json::render_path(&port_path),
                ConnectionShape::Endpoints,
            ))
        }
        Some(other) => Err(json::error_at(
            &field_at,
            format!(
                "connection `{field}` must be an activity id or an object, found {}",
                json::kind_of(other)
            ),
        )),
        None => Err(json::error_at(
            &field_at,
            format!("connection has no `{field}`"),
        )),
    }
}

/// The shape new connections of a flowchart are written in: that of its first connection.
pub(crate) fn shape_in_use(container: &Map<String, Value>) -> ConnectionShape {
    read_all(container, &[], false)
        .ok()
        .and_then(|connections| connections.first().map(|c| c.shape))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(value: Value) -> Result<Vec<Connection>, ParseError> {
        let map = value.as_object().cloned().unwrap_or_default();
        read_all(&map, &[Seg::Key("root".into())], true)
    }

    #[test]
    fn every_shape_normalises_to_endpoints() {
        let connections = read(json!({"connections": [
            {"source": {"activity": "a", "port": "Done"}, "target": {"activity": "b", "port": "In"}, "vertices": []},
            {"source": "b", "target": "c", "sourcePort": "True", "targetPort": "In"},
            {"source": "c", "target": "d"},
            {"source": {"activity": "d"}, "target": {"activity": "e"}},
            {"$ref": "7"},
        ]}))
        .expect("all shapes are accepted");
        assert_eq!(connections.len(), 4);
        assert!(connections[0].links(&Endpoint::new("a", "Done"), &Endpoint::new("b", "In")));
        assert_eq!(connections[0].shape, ConnectionShape::Endpoints);
        assert_eq!(
            connections[0].source_port_path,
            "$.root.connections[0].source.port"
        );
        assert!(connections[1].links(&Endpoint::new("b", "True"), &Endpoint::new("c", "In")));
        assert_eq!(connections[1].shape, ConnectionShape::Flat);
        assert_eq!(
            connections[1].source_port_path,
            "$.root.connections[1].sourcePort"
        );
        assert!(connections[2].links(&Endpoint::new("c", "Done"), &Endpoint::new("d", "In")));
        assert!(connections[3].links(&Endpoint::new("d", "Done"), &Endpoint::new("e", "In")));
    }

    #[test]
    fn dollar_values_lists_are_read() {
        let connections =
            read(json!({"connections": {"$id": "1", "$values": [{"source": "a", "target": "b"}]}}))
                .expect("wrapper");
        assert_eq!(connections[0].path, "$.root.connections.$values[0]");
    }

    #[test]
    fn malformed_connections_name_their_path() {
        let error = read(json!({"connections": [{"source": "a"}]})).expect_err("no target");
        assert_eq!(error.path, "$.root.connections[0].target");
        let error = read(json!({"connections": [{"source": {"port": "Done"}, "target": "b"}]}))
            .expect_err("no activity");
        assert_eq!(error.path, "$.root.connections[0].source.activity");
        let error = read(json!({"connections": [1]})).expect_err("not an object");
        assert_eq!(error.path, "$.root.connections[0]");
        let error = read(json!({"connections": "x"})).expect_err("not a list");
        assert_eq!(error.path, "$.root.connections");
    }

    #[test]
    fn shapes_write_back_as_read() {
        let source = Endpoint::new("a", "Done");
        let target = Endpoint::new("b", "In");
        for shape in [ConnectionShape::Endpoints, ConnectionShape::Flat] {
            let written = shape.write(&source, &target);
            let read_back = read(json!({"connections": [written]})).expect("valid");
            assert_eq!(read_back[0].shape, shape);
            assert!(read_back[0].links(&source, &target));
        }
    }
}
