//! Every key of a config file as Markdown tables, one per block, from the JSON Schema that the
//! loader's own serde structs and their doc comments give (`schemars`): the reference page's
//! config sections, which therefore cannot list a key the loader refuses or miss one it reads.

use serde_json::{Map, Value};

/// One block of a config file: where it sits (`metric.judge`, `targets[]`) and its schema.
struct Block<'a> {
    path: String,
    schema: &'a Value,
}

/// The tables of the config file `schema` describes: the top level, then each block it holds
/// at any depth, each under a `###` heading of its key path. `label`, when given, follows each
/// path in the headings so that two files' tables on one page keep distinct anchors.
pub fn markdown(schema: &Value, label: Option<&str>) -> String {
    let defs = schema.get("$defs").and_then(Value::as_object);
    let blocks = blocks(schema, defs);
    let heading = |path: &str| match label {
        Some(label) => format!("`{path}` ({label})"),
        None => format!("`{path}`"),
    };
    let mut page = String::new();
    for (i, block) in blocks.iter().enumerate() {
        let title = if i == 0 {
            match label {
                Some(label) => format!("Top level ({label})"),
                None => "Top level".to_owned(),
            }
        } else {
            heading(&block.path)
        };
        page.push_str(&format!("\n### {title}\n\n"));
        if i > 0
            && let Some(about) = text(block.schema)
        {
            // A doc comment that opens with the block's own path says nothing the heading
            // does not.
            let named = format!("`{}`", block.path);
            let about = about
                .strip_prefix(&named)
                .map(|rest| rest.trim_start_matches([':', '.']).trim_start())
                .unwrap_or(&about);
            if !about.is_empty() {
                page.push_str(&format!("{about}\n\n"));
            }
        }
        page.push_str("| key | type | default | what it is |\n| :--- | :--- | :--- | :--- |\n");
        let required: Vec<&str> = block
            .schema
            .get("required")
            .and_then(Value::as_array)
            .map(|keys| keys.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (key, property) in properties(block.schema) {
            let inner = resolve(present(property), defs);
            let kind = match target(property, defs)
                .and_then(|held| blocks.iter().find(|b| std::ptr::eq(b.schema, held)))
            {
                Some(block) => {
                    let what = if is_list(present(property), defs) {
                        "list of blocks"
                    } else {
                        "block"
                    };
                    format!("[{what}](#{})", anchor(&heading(&block.path)))
                }
                None => type_text(inner, defs),
            };
            let default = if required.contains(&key.as_str()) {
                "required".to_owned()
            } else {
                property
                    .get("default")
                    .map(default_text)
                    .unwrap_or_default()
            };
            let mut about = text(property).unwrap_or_default();
            if let Some(values) = values(inner) {
                about.push_str(&values);
            }
            page.push_str(&format!(
                "| `{key}` | {kind} | {default} | {} |\n",
                about.trim()
            ));
        }
    }
    page
}

/// The top level, then every block reachable from it, depth first in the order the keys are
/// declared. A block held under several keys (the provider blocks, the harness of the run and
/// of each target) is listed once, under the shallowest of them, the first declared at that
/// depth.
fn blocks<'a>(schema: &'a Value, defs: Option<&'a Map<String, Value>>) -> Vec<Block<'a>> {
    // Each block's place: breadth first, so the first place found is the shallowest.
    let mut placed: Vec<Block<'a>> = vec![Block {
        path: String::new(),
        schema,
    }];
    let mut next = 0;
    while next < placed.len() {
        let parent = placed[next].path.clone();
        for child in children(&parent, placed[next].schema, defs) {
            if !placed.iter().any(|b| std::ptr::eq(b.schema, child.schema)) {
                placed.push(child);
            }
        }
        next += 1;
    }
    // Then in reading order: each block followed by the blocks placed under it.
    fn visit<'a>(
        at: usize,
        placed: &[Block<'a>],
        defs: Option<&'a Map<String, Value>>,
        out: &mut Vec<usize>,
    ) {
        out.push(at);
        for child in children(&placed[at].path, placed[at].schema, defs) {
            if let Some(i) = placed.iter().position(|b| b.path == child.path) {
                visit(i, placed, defs, out);
            }
        }
    }
    let mut order = Vec::new();
    visit(0, &placed, defs, &mut order);
    let mut placed: Vec<Option<Block<'a>>> = placed.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| placed[i].take()).collect()
}

/// The blocks a block's keys hold, each at its path under `parent`.
fn children<'a>(
    parent: &str,
    schema: &'a Value,
    defs: Option<&'a Map<String, Value>>,
) -> Vec<Block<'a>> {
    properties(schema)
        .filter_map(|(key, property)| {
            let held = target(property, defs)?;
            let list = if is_list(present(property), defs) {
                "[]"
            } else {
                ""
            };
            let path = if parent.is_empty() {
                format!("{key}{list}")
            } else {
                format!("{parent}.{key}{list}")
            };
            Some(Block { path, schema: held })
        })
        .collect()
}

/// A block's keys with their schemas, in the order they are declared.
fn properties(schema: &Value) -> impl Iterator<Item = (&String, &Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

/// The block a key holds, itself or as the items of a list: a schema with keys of its own.
fn target<'a>(property: &'a Value, defs: Option<&'a Map<String, Value>>) -> Option<&'a Value> {
    let mut inner = resolve(present(property), defs);
    if let Some(items) = inner.get("items") {
        inner = resolve(present(items), defs);
    }
    inner.get("properties").is_some().then_some(inner)
}

/// Whether a key holds a list.
fn is_list(schema: &Value, defs: Option<&Map<String, Value>>) -> bool {
    resolve(schema, defs).get("items").is_some()
}

/// The schema behind a `$ref` to `#/$defs/...`, or the schema itself.
fn resolve<'a>(schema: &'a Value, defs: Option<&'a Map<String, Value>>) -> &'a Value {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|reference| reference.strip_prefix("#/$defs/"))
        .and_then(|name| defs?.get(name))
        .unwrap_or(schema)
}

/// What a key may hold when it is given: an optional key's schema without its `null`.
fn present(schema: &Value) -> &Value {
    for alternatives in ["anyOf", "oneOf"] {
        if let Some(list) = schema.get(alternatives).and_then(Value::as_array) {
            let given: Vec<&Value> = list.iter().filter(|s| !is_null(s)).collect();
            if given.len() == 1 && list.len() == 2 {
                return given[0];
            }
        }
    }
    schema
}

/// Whether a schema allows nothing but `null`.
fn is_null(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// The type of a key as a reader names it: `string`, `list of number`, `text`, a check...
fn type_text(schema: &Value, defs: Option<&Map<String, Value>>) -> String {
    let schema = resolve(present(schema), defs);
    if let Some(title) = schema.get("title").and_then(Value::as_str) {
        return title.to_owned();
    }
    if let Some(choices) = choices(schema) {
        return choices
            .iter()
            .map(|(name, _)| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(" \\| ");
    }
    for alternatives in ["anyOf", "oneOf"] {
        if let Some(list) = schema.get(alternatives).and_then(Value::as_array) {
            return list
                .iter()
                .filter(|s| !is_null(s))
                .map(|s| type_text(s, defs))
                .collect::<Vec<_>>()
                .join(" or ");
        }
    }
    match schema.get("type") {
        Some(Value::String(kind)) => match kind.as_str() {
            "array" => match schema.get("items") {
                Some(items) => format!("list of {}", type_text(items, defs)),
                None => "list".to_owned(),
            },
            "object" => match schema.get("additionalProperties") {
                Some(values) if values.is_object() => {
                    format!("map of {}", type_text(values, defs))
                }
                _ => "mapping".to_owned(),
            },
            other => other.to_owned(),
        },
        Some(Value::Array(kinds)) => {
            let kinds: Vec<&str> = kinds
                .iter()
                .filter_map(Value::as_str)
                .filter(|k| *k != "null")
                .collect();
            match kinds.as_slice() {
                // An optional key: what it holds when given.
                [kind] => {
                    let mut given = schema.clone();
                    given["type"] = Value::from(*kind);
                    type_text(&given, defs)
                }
                // A scalar read as text: `model: 4` is the model `"4"`.
                _ if kinds.contains(&"string") => "text".to_owned(),
                _ => kinds.join(" or "),
            }
        }
        _ => "any".to_owned(),
    }
}

/// The values of a closed set (a Rust enum of unit variants), each with its doc comment.
fn choices(schema: &Value) -> Option<Vec<(String, Option<String>)>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return Some(values.iter().map(|v| (scalar(v), None)).collect());
    }
    let list = schema.get("oneOf").and_then(Value::as_array)?;
    list.iter()
        .map(|variant| {
            let value = variant
                .get("const")
                .or_else(|| variant.get("enum")?.as_array()?.first())?;
            Some((scalar(value), text(variant)))
        })
        .collect()
}

/// After a closed set's key, what each value means, when its variants say.
fn values(schema: &Value) -> Option<String> {
    let choices = choices(schema)?;
    let said: Vec<String> = choices
        .iter()
        .filter_map(|(name, about)| Some(format!("`{name}`: {}", about.as_deref()?)))
        .collect();
    (!said.is_empty()).then(|| format!(" {}", said.join(" ")))
}

/// A default value as a config would write it.
fn default_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::Array(items) if items.is_empty() => String::new(),
        Value::Object(_) => String::new(),
        Value::String(s) if s.is_empty() => String::new(),
        other => format!("`{}`", scalar(other)),
    }
}

/// A scalar without JSON's quotes; anything else as compact JSON.
fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A schema's doc comment as one line of a table cell: its paragraphs joined, the links of
/// Rust docs to the code's own items dropped (they mean nothing to a reader of a config), and
/// the pipes that would end the cell escaped.
fn text(schema: &Value) -> Option<String> {
    let parts: Vec<&str> = ["title", "description"]
        .iter()
        .filter_map(|key| schema.get(*key)?.as_str())
        .collect();
    if parts.is_empty() {
        return None;
    }
    let joined = parts.join(" ");
    let mut line = String::with_capacity(joined.len());
    let mut rest = joined.as_str();
    // `[`Item`]` and `[`Item`](path)` become `Item`; a parenthesis holding nothing else goes.
    while let Some(start) = rest.find("[`") {
        let Some(len) = rest[start..].find("`]") else {
            break;
        };
        let name = &rest[start + 1..start + len + 1];
        let mut end = start + len + 2;
        if rest[end..].starts_with('(')
            && let Some(close) = rest[end..].find(')')
        {
            end += close + 1;
        }
        let before = &rest[..start];
        if before.ends_with('(') && rest[end..].starts_with(')') {
            line.push_str(before[..before.len() - 1].trim_end());
            end += 1;
        } else {
            line.push_str(before);
            line.push_str(name);
        }
        rest = &rest[end..];
    }
    line.push_str(rest);
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(line.replace('|', "\\|"))
}

/// The anchor GitHub and mdBook give a heading: lower case, spaces to dashes, and nothing
/// but letters, digits, dashes and underscores kept.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn rust_doc_links_become_plain_names_or_go() {
        let about = |s: &str| text(&json!({ "description": s })).unwrap();
        assert_eq!(
            about("How the scores combine ([`ObjectiveConfig`])."),
            "How the scores combine."
        );
        assert_eq!(
            about("Resolved into an [`OptimizerPlan`](crate::optimizer::OptimizerPlan) once."),
            "Resolved into an `OptimizerPlan` once."
        );
        assert_eq!(about("a | b\nc"), "a \\| b c");
    }

    #[test]
    fn types_read_as_a_config_writer_names_them() {
        let defs = json!({"Mode": {"oneOf": [
            {"const": "exact", "description": "Equal."},
            {"const": "contains", "description": "Inside."}
        ]}});
        let defs = defs.as_object();
        assert_eq!(
            type_text(&json!({"type": ["string", "null"]}), defs),
            "string"
        );
        assert_eq!(
            type_text(&json!({"type": ["string", "number", "boolean"]}), defs),
            "text"
        );
        assert_eq!(
            type_text(&json!({"type": "array", "items": {"type": "string"}}), defs),
            "list of string"
        );
        assert_eq!(
            type_text(
                &json!({"type": "object", "additionalProperties": {"type": "string"}}),
                defs
            ),
            "map of string"
        );
        let mode = json!({"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}]});
        assert_eq!(type_text(&mode, defs), "`exact` \\| `contains`");
        assert_eq!(
            values(resolve(present(&mode), defs)).unwrap(),
            " `exact`: Equal. `contains`: Inside."
        );
    }

    #[test]
    fn nested_blocks_get_tables_of_their_own_and_shared_ones_one_table() {
        let schema = json!({
            "type": "object",
            "required": ["skill"],
            "properties": {
                "skill": {"type": "string", "description": "The seed."},
                "provider": {"anyOf": [{"$ref": "#/$defs/Provider"}, {"type": "null"}],
                             "description": "The target."},
                "judge_provider": {"anyOf": [{"$ref": "#/$defs/Provider"}, {"type": "null"}]},
                "targets": {"type": "array", "items": {"$ref": "#/$defs/Target"}, "default": []},
                "harness": {"$ref": "#/$defs/Harness"}
            },
            "$defs": {
                "Provider": {"type": "object", "description": "A model.", "properties": {
                    "model": {"type": "string", "default": "m1", "description": "Its id."}
                }},
                "Harness": {"type": "object", "description": "`harness`: how it runs.",
                            "properties": {"type": {"type": "string"}}},
                "Target": {"type": "object", "properties": {
                    "provider": {"$ref": "#/$defs/Provider"},
                    "harness": {"$ref": "#/$defs/Harness"},
                    "weight": {"type": "number", "default": 1.0}
                }}
            }
        });
        let page = markdown(&schema, None);
        assert_eq!(page.matches("\n### ").count(), 4, "{page}");
        // The harness a target may hold is the run's own block, listed under its shorter path,
        // after the targets' table that links to it, and without the path restated.
        assert!(page.contains("### `harness`\n\nhow it runs.\n"), "{page}");
        assert!(!page.contains("targets[].harness"), "{page}");
        assert!(
            page.find("### `targets[]`") < page.find("### `harness`"),
            "{page}"
        );
        assert!(
            page.contains("| `skill` | string | required | The seed. |"),
            "{page}"
        );
        assert!(
            page.contains("| `provider` | [block](#provider) |  | The target. |"),
            "{page}"
        );
        assert!(
            page.contains("| `judge_provider` | [block](#provider) |  |  |"),
            "{page}"
        );
        assert!(
            page.contains("| `targets` | [list of blocks](#targets) |  |  |"),
            "{page}"
        );
        assert!(page.contains("### `targets[]`\n"), "{page}");
        assert!(
            page.contains("| `model` | string | `m1` | Its id. |"),
            "{page}"
        );
        assert!(page.contains("| `weight` | number | `1.0` |  |"), "{page}");
        assert_eq!(
            type_text(
                &json!({"type": ["array", "null"], "items": {"type": "string"}}),
                None
            ),
            "list of string"
        );
        let labelled = markdown(&schema, Some("classifier"));
        assert!(
            labelled.contains("### `provider` (classifier)"),
            "{labelled}"
        );
        assert!(labelled.contains("(#provider-classifier)"), "{labelled}");
    }
}
