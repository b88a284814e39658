//! `tojson` in chat templates as Hugging Face renders it (Python's `json.dumps` with
//! `ensure_ascii=False`): `{"a": 1, "b": [2, 3]}` with a space after `:` and `,`, keys in
//! their order, or Python's layout with `indent=N`. minijinja's own filter writes
//! compact JSON; a model trained on one spacing should be shown that spacing.

use minijinja::value::{Kwargs, Value};
use minijinja::{Error, ErrorKind};
use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter, Serializer};

/// `json.dumps`'s default separators: `", "` between items, `": "` after a key.
struct PythonCompact;

/// `", "` before every item but the first.
fn item_separator<W: ?Sized + std::io::Write>(writer: &mut W, first: bool) -> std::io::Result<()> {
    if first {
        Ok(())
    } else {
        writer.write_all(b", ")
    }
}

impl Formatter for PythonCompact {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        item_separator(writer, first)
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        item_separator(writer, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

/// The `tojson` filter: `value | tojson` or `value | tojson(indent=N)`.
pub fn tojson(value: Value, options: Kwargs) -> Result<Value, Error> {
    let indent: Option<usize> = options.get("indent")?;
    options.assert_all_used()?;
    let failed = |error: serde_json::Error| {
        Error::new(ErrorKind::InvalidOperation, format!("tojson: {error}"))
    };
    let mut out = Vec::new();
    match indent {
        Some(width) => {
            let spaces = vec![b' '; width];
            let mut serializer =
                Serializer::with_formatter(&mut out, PrettyFormatter::with_indent(&spaces));
            value.serialize(&mut serializer).map_err(failed)?;
        }
        None => {
            let mut serializer = Serializer::with_formatter(&mut out, PythonCompact);
            value.serialize(&mut serializer).map_err(failed)?;
        }
    }
    Ok(Value::from(
        String::from_utf8(out).expect("serde_json writes UTF-8"),
    ))
}

#[cfg(test)]
mod tests {
    use minijinja::{Environment, context};

    #[test]
    fn spacing_and_key_order_are_pythons() {
        let mut environment = Environment::new();
        environment.add_filter("tojson", super::tojson);
        let value = serde_json::json!({"b": [1, "é", {}], "a": {"x": null}});
        let compact = environment
            .render_str("{{ v | tojson }}", context! { v => value })
            .unwrap();
        assert_eq!(compact, r#"{"b": [1, "é", {}], "a": {"x": null}}"#);
        let indented = environment
            .render_str("{{ v | tojson(indent=2) }}", context! { v => value })
            .unwrap();
        assert_eq!(
            indented,
            "{\n  \"b\": [\n    1,\n    \"é\",\n    {}\n  ],\n  \"a\": {\n    \"x\": null\n  }\n}"
        );
    }
}
