//! The walk over an activity tree: container `activities` lists and activity-shaped objects
//! embedded anywhere in an activity's properties (Fork branches, If then/else, FlowNode body,
//! ForEach body, Switch cases, properties of types never seen before).

use serde_json::{Map, Value};

use super::activity::{self, ActivityNode, ActivitySlot};
use crate::ParseError;
use crate::json::{self, Location, Seg};

/// Every activity of the tree rooted at `root`, in document order (pre-order), the root first.
///
/// With `strict`, an ill-shaped activity is an error; without, it is skipped.
pub(crate) fn nodes(
    root: &Map<String, Value>,
    mut location: Location,
    strict: bool,
) -> Result<Vec<ActivityNode<'_>>, ParseError> {
    let mut walk = Walk {
        strict,
        out: Vec::new(),
    };
    walk.activity(root, &mut location, None, ActivitySlot::Root, 0)?;
    Ok(walk.out)
}

/// Whether a property value embeds activities.
pub(crate) fn holds_activities(value: &Value) -> bool {
    match value {
        Value::Object(map) if activity::is_activity_shaped(map) => true,
        Value::Object(map) if activity::is_input_wrapper(map) => false,
        Value::Object(map) => map.values().any(holds_activities),
        Value::Array(items) => items.iter().any(holds_activities),
        _ => false,
    }
}

/// Whether the walk steps into `value`: scalars hold no activity.
fn may_hold_activities(value: &Value) -> bool {
    matches!(value, Value::Object(_) | Value::Array(_))
}

/// The walk keeps one path, the location of what it is looking at, which each step extends
/// and restores; only an activity it finds gets a copy. (A walk reads every property of every
/// activity, and a copy of the path per property was most of its cost.) A step that fails
/// leaves the path as it was when it failed: the walk is over then.
struct Walk<'a> {
    strict: bool,
    out: Vec<ActivityNode<'a>>,
}

impl<'a> Walk<'a> {
    fn activity(
        &mut self,
        json: &'a Map<String, Value>,
        path: &mut Location,
        parent: Option<usize>,
        slot: ActivitySlot,
        depth: usize,
    ) -> Result<(), ParseError> {
        if self.strict {
            activity::check_fields(json, path)?;
        }
        let index = self.out.len();
        let parent_id = parent
            .and_then(|p| self.out.get(p))
            .and_then(|node| node.id());
        self.out.push(ActivityNode {
            json,
            location: path.clone(),
            parent,
            parent_id,
            slot,
            depth,
        });
        for (key, value) in json {
            if !may_hold_activities(value) {
                continue;
            }
            if key == "activities" {
                path.push(Seg::Key(key.clone()));
                self.children(value, path, index, depth)?;
                path.pop();
            } else if !activity::is_structural_key(json, key) {
                path.push(Seg::Key(key.clone()));
                self.embedded(value, path, key, index, depth)?;
                path.pop();
            }
        }
        Ok(())
    }

    fn children(
        &mut self,
        list: &'a Value,
        path: &mut Location,
        parent: usize,
        depth: usize,
    ) -> Result<(), ParseError> {
        let Some((items, step)) = json::array_like(list) else {
            return Ok(());
        };
        let at_list = path.len();
        path.extend(step);
        for (i, item) in items.iter().enumerate() {
            path.push(Seg::Index(i));
            match item {
                // A back-reference repeats an activity already read where it first appeared.
                Value::Object(child) if child.contains_key("$ref") => {}
                Value::Object(child)
                    if self.strict || matches!(child.get("type"), Some(Value::String(_))) =>
                {
                    self.activity(child, path, Some(parent), ActivitySlot::Child, depth + 1)?;
                }
                Value::Object(_) => {}
                other if self.strict => {
                    return Err(json::error_at(
                        path,
                        format!(
                            "an activity must be a JSON object, found {}",
                            json::kind_of(other)
                        ),
                    ));
                }
                _ => {}
            }
            path.pop();
        }
        path.truncate(at_list);
        Ok(())
    }

    fn embedded(
        &mut self,
        value: &'a Value,
        path: &mut Location,
        property: &str,
        parent: usize,
        depth: usize,
    ) -> Result<(), ParseError> {
        match value {
            Value::Object(map) if activity::is_activity_shaped(map) => self.activity(
                map,
                path,
                Some(parent),
                ActivitySlot::Embedded {
                    property: property.to_owned(),
                },
                depth + 1,
            ),
            Value::Object(map) if activity::is_input_wrapper(map) => Ok(()),
            Value::Object(map) => {
                for (key, inner) in map {
                    if may_hold_activities(inner) {
                        path.push(Seg::Key(key.clone()));
                        self.embedded(inner, path, property, parent, depth)?;
                        path.pop();
                    }
                }
                Ok(())
            }
            Value::Array(items) => {
                for (i, inner) in items.iter().enumerate() {
                    if may_hold_activities(inner) {
                        path.push(Seg::Index(i));
                        self.embedded(inner, path, property, parent, depth)?;
                        path.pop();
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn embedded_activities_are_found_wherever_they_sit() {
        let root = json!({
            "id": "seq", "type": "Elsa.Sequence", "activities": [
                {"id": "fork", "type": "Elsa.Fork", "branches": [
                    {"id": "b1", "type": "Elsa.WriteLine"},
                    {"id": "b2", "type": "Elsa.Sequence", "activities": [{"id": "b2a", "type": "X"}]}
                ]},
                {"id": "if", "type": "Elsa.If", "then": {"id": "t", "type": "Elsa.WriteLine"}, "else": null,
                 "condition": {"typeName": "Boolean", "expression": {"type": "Object", "value": {"id": "not", "type": "an activity"}}}},
                {"id": "sw", "type": "Elsa.Switch", "cases": [{"label": "A", "activity": {"id": "c1", "type": "Elsa.WriteLine"}}]},
                {"id": "custom", "type": "Acme.Thing", "whatever": {"deep": [{"id": "n", "type": "Elsa.FlowNode", "body": {"id": "nb", "type": "Elsa.WriteLine"}}]}}
            ]
        });
        let map = root.as_object().cloned().unwrap_or_default();
        let nodes = nodes(&map, vec![json::Seg::Key("root".into())], true).expect("valid");
        let ids: Vec<_> = nodes.iter().filter_map(|n| n.id()).collect();
        assert_eq!(
            ids,
            [
                "seq", "fork", "b1", "b2", "b2a", "if", "t", "sw", "c1", "custom", "n", "nb"
            ]
        );
        let c1 = nodes.iter().find(|n| n.id() == Some("c1")).expect("c1");
        assert_eq!(c1.path(), "$.root.activities[2].cases[0].activity");
        assert_eq!(c1.parent_id(), Some("sw"));
        assert_eq!(
            c1.slot(),
            &ActivitySlot::Embedded {
                property: "cases".into()
            }
        );
        let nb = nodes.iter().find(|n| n.id() == Some("nb")).expect("nb");
        assert_eq!(nb.depth(), 3);
        assert!(holds_activities(&root["activities"][0]["branches"]));
        assert!(!holds_activities(&root["activities"][1]["condition"]));
    }

    #[test]
    fn strict_walk_rejects_ill_shaped_children() {
        let root = json!({"id": "f", "type": "Elsa.Flowchart", "activities": [{"id": "a", "type": "A"}, "x"]});
        let map = root.as_object().cloned().unwrap_or_default();
        let error =
            nodes(&map, vec![json::Seg::Key("root".into())], true).expect_err("string child");
        assert_eq!(error.path, "$.root.activities[1]");
        assert_eq!(nodes(&map, Vec::new(), false).expect("lenient").len(), 2);
    }
}
