//! Variables and workflow input/output declarations.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::ParseError;
use crate::json::{self, Seg};

/// A variable declared by a workflow or a container activity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Variable {
    /// The variable id (often equal to the name).
    pub id: Option<String>,
    /// The variable name scripts use.
    pub name: Option<String>,
    /// The value type, for example `String` or `Object`.
    pub type_name: Option<String>,
    /// Whether the variable holds a list.
    pub is_array: bool,
    /// The initial value (null when none).
    pub value: Value,
    /// JSON path of the declaration.
    pub path: String,
}

impl Variable {
    /// The name, falling back to the id: what identifies the variable to a person.
    pub fn key(&self) -> Option<&str> {
        self.name.as_deref().or(self.id.as_deref())
    }
}

/// A variable to add to a definition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewVariable {
    /// The variable name (also used as its id).
    pub name: String,
    /// The value type, for example `String`.
    pub type_name: String,
    /// The initial value.
    #[serde(default)]
    pub value: Value,
}

impl NewVariable {
    /// A variable of `type_name` named `name` with no initial value.
    pub fn new(name: impl Into<String>, type_name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            type_name: type_name.into(),
            value: Value::Null,
        }
    }

    /// The declaration as Elsa 3 writes it.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.name,
            "name": self.name,
            "typeName": self.type_name,
            "isArray": false,
            "value": self.value,
        })
    }
}

/// A workflow input or output declaration (`inputs` / `outputs` of a definition).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IoDeclaration {
    /// The name callers use.
    pub name: Option<String>,
    /// The value type (`type` or `typeName` in the JSON).
    pub type_name: Option<String>,
    /// The label the designer shows.
    pub display_name: Option<String>,
    /// JSON path of the declaration.
    pub path: String,
}

/// Reads a `variables` list. `strict` turns malformed entries into errors.
pub(crate) fn read_all(
    owner: &Map<String, Value>,
    location: &[Seg],
    strict: bool,
) -> Result<Vec<Variable>, ParseError> {
    let list = match json::optional_array(owner, "variables", location) {
        Ok(list) => list,
        Err(error) if strict => return Err(error),
        Err(_) => None,
    };
    let Some((items, at)) = list else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match read_one(item, &json::index(&at, i)) {
            Ok(Some(variable)) => out.push(variable),
            Ok(None) => {}
            Err(error) if strict => return Err(error),
            Err(_) => {}
        }
    }
    Ok(out)
}

fn read_one(item: &Value, at: &[Seg]) -> Result<Option<Variable>, ParseError> {
    let map = json::expect_object(item, at, "a variable")?;
    if map.contains_key("$ref") {
        return Ok(None);
    }
    Ok(Some(Variable {
        id: json::optional_str(map, "id", at)?.map(str::to_owned),
        name: json::optional_str(map, "name", at)?.map(str::to_owned),
        type_name: json::optional_str(map, "typeName", at)?.map(str::to_owned),
        is_array: json::optional_bool(map, "isArray", at)?.unwrap_or(false),
        value: map.get("value").cloned().unwrap_or(Value::Null),
        path: json::render_path(at),
    }))
}

/// Reads an `inputs` or `outputs` declaration list.
pub(crate) fn read_io(
    owner: &Map<String, Value>,
    field: &str,
    strict: bool,
) -> Result<Vec<IoDeclaration>, ParseError> {
    let list = match json::optional_array(owner, field, &[]) {
        Ok(list) => list,
        Err(error) if strict => return Err(error),
        Err(_) => None,
    };
    let Some((items, at)) = list else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let item_at = json::index(&at, i);
        let declaration = json::expect_object(item, &item_at, "a declaration").and_then(|map| {
            let type_name = match json::optional_str(map, "typeName", &item_at)? {
                Some(type_name) => Some(type_name),
                None => json::optional_str(map, "type", &item_at)?,
            };
            Ok(IoDeclaration {
                name: json::optional_str(map, "name", &item_at)?.map(str::to_owned),
                type_name: type_name.map(str::to_owned),
                display_name: json::optional_str(map, "displayName", &item_at)?.map(str::to_owned),
                path: json::render_path(&item_at),
            })
        });
        match declaration {
            Ok(declaration) => out.push(declaration),
            Err(error) if strict => return Err(error),
            Err(_) => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_read_with_paths() {
        let owner = json!({"variables": [
            {"id": "v1", "name": "Counter", "typeName": "Int32", "value": "0", "storageDriverType": "x"},
            {"$ref": "3"},
        ]});
        let map = owner.as_object().cloned().unwrap_or_default();
        let variables = read_all(&map, &[], true).expect("valid");
        assert_eq!(variables.len(), 1);
        assert_eq!(variables[0].key(), Some("Counter"));
        assert_eq!(variables[0].path, "$.variables[0]");
    }

    #[test]
    fn wrong_variable_shapes_are_errors() {
        let map = json!({"variables": [{"name": 5}]})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let error = read_all(&map, &[], true).expect_err("name must be a string");
        assert_eq!(error.path, "$.variables[0].name");
        assert!(read_all(&map, &[], false).expect("lenient").is_empty());
    }

    #[test]
    fn io_declarations_accept_type_or_type_name() {
        let map = json!({"outputs": [{"type": "Object", "name": "Output1"}, {"typeName": "String", "name": "O2"}]})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let outputs = read_io(&map, "outputs", true).expect("valid");
        assert_eq!(outputs[0].type_name.as_deref(), Some("Object"));
        assert_eq!(outputs[1].type_name.as_deref(), Some("String"));
    }
}
