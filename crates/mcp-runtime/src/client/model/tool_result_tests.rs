use serde_json::json;

use super::*;

/// What `read` must give: a `Value`, then [`ToolOutput::from_wire`] (as before this reader).
fn reference(text: &str) -> ToolRead {
    read_slowly(text)
}

/// The fast reader alone: `None` when it gives up.
fn fast(text: &str) -> Option<ToolRead> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    match deserializer.deserialize_map(ResultVisitor).ok()? {
        Fast::Output(output) => Some(ToolRead::Output(output)),
        Fast::InputRequired => Some(ToolRead::Other),
    }
}

fn assert_same(text: &str, read: ToolRead, expected: ToolRead) {
    match (read, expected) {
        (ToolRead::Output(read), ToolRead::Output(expected)) => {
            assert_eq!(read, expected, "{text}");
            assert_eq!(
                serde_json::to_string(&read).unwrap(),
                serde_json::to_string(&expected).unwrap(),
                "field order: {text}"
            );
        }
        (ToolRead::Invalid(read), ToolRead::Invalid(expected)) => {
            assert_eq!(read.to_string(), expected.to_string(), "{text}");
        }
        (ToolRead::Other, ToolRead::Other) => {}
        (read, expected) => panic!("{text}: read {read:?}, expected {expected:?}"),
    }
}

/// Results the fast reader takes by itself, and must read as `from_wire` does.
const TAKEN: &[&str] = &[
    r#"{}"#,
    r#"{"content":[]}"#,
    r#"{"content":[{"type":"text","text":"hello"}],"isError":false}"#,
    r#"{"content":[{"type":"text","text":"a","annotations":{"priority":1}}],"isError":true,"x-later":[1],"_meta":{"k":"v"}}"#,
    r#"{"x-first":1,"content":[{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"unknown","v":2},{"type":"text"}],"structuredContent":{"n":1},"x-last":null}"#,
    r#"{"structuredContent":null,"isError":false}"#,
    r#"{"structuredContent":[1,2],"content":[{"type":"resource_link","uri":"u"}]}"#,
    r#"{"content":[{"text":"before","type":"text","_meta":{"a":1}}]}"#,
    // Fields a type models, on a block of another type: kept in `extra`, in their place.
    r#"{"content":[{"mimeType":"m","type":"text","resource":{},"text":"t","data":"d","z":0}]}"#,
    r#"{"content":[{"type":"resource_link","text":"t","uri":"u","data":1,"mimeType":"m"}]}"#,
    r#"{"content":[{"type":"resource","resource":{"uri":"u","text":"x"},"annotations":{}}]}"#,
    r#"{"content":[{"type":"audio","mimeType":"audio/wav","data":"AA==","extra":[true]}]}"#,
    // Blocks that do not fit their type: kept whole, `type` in its place.
    r#"{"content":[{"type":"resource","resource":"not an object"}]}"#,
    r#"{"content":[{"a":1,"type":"image","data":"AA=="}]}"#,
    r#"{"content":[{"a":1,"b":2,"type":"text","text":7,"c":3}]}"#,
    r#"{"content":[{"a":1,"type":{"nested":["x"]}}]}"#,
    r#"{"content":[{"type":7},{"type":null},{"type":[1,"text"]},{"type":-1.5},{"type":true}]}"#,
    r#"{"content":[{"no":"type"},{}]}"#,
    // Escaped names and kinds are the names and kinds they spell.
    r#"{"cont\u0065nt":[{"typ\u0065":"t\u0065xt","t\u0065xt":"\u00e9\ud83d\ude00\n"}]}"#,
    // `resultType` is the protocol's, never the tool's.
    r#"{"resultType":"complete","content":[{"type":"text","text":"x"}]}"#,
    r#"{"resultType":{"a":[1]},"content":[]}"#,
    r#"{"resultType":5}"#,
    r#"{"resultType":null}"#,
    // Removed in place: the fields after it keep their order.
    r#"{"a":1,"resultType":"complete","b":2,"c":3}"#,
    r#"{"resultType":["input_required"]}"#,
    // Questions: rmcp's parse tells what they are.
    r#"{"resultType":"input_required","inputRequests":{}}"#,
    r#"{"content":[{"type":"text","text":"x"}],"resultType":"input_\u0072equired"}"#,
];

/// Results the fast reader gives up on: the slow one decides (errors included).
const LEFT: &[&str] = &[
    // Not an object.
    "5",
    "[]",
    r#""text""#,
    "null",
    "true",
    // Fields of the wrong type.
    r#"{"content":null}"#,
    r#"{"content":{"type":"text"}}"#,
    r#"{"content":["text"]}"#,
    r#"{"content":[1,{"type":"text","text":"a"}]}"#,
    r#"{"content":[[]]}"#,
    r#"{"isError":null}"#,
    r#"{"isError":"yes"}"#,
    r#"{"isError":1}"#,
    // A name twice: the last value wins, at the first place.
    r#"{"content":[],"content":[{"type":"text","text":"second"}]}"#,
    r#"{"isError":true,"isError":false}"#,
    r#"{"a":1,"b":2,"a":3}"#,
    r#"{"structuredContent":1,"structuredContent":null}"#,
    r#"{"resultType":"input_required","resultType":"complete","content":[]}"#,
    r#"{"resultType":"complete","resultType":"input_required"}"#,
    r#"{"content":[{"type":"text","text":"a","text":"b"}]}"#,
    r#"{"content":[{"type":"text","type":"image","text":"a"}]}"#,
    r#"{"content":[{"type":"text","text":"a","x":1,"x":2}]}"#,
    // Valid JSON that a `Value` cannot hold.
    r#"{"content":[],"x":1e400}"#,
    r#"{"content":[{"type":"text","text":"a","n":-1e999}]}"#,
];

#[test]
fn the_fast_reader_takes_common_results_as_from_wire_reads_them() {
    for text in TAKEN {
        let taken = fast(text).unwrap_or_else(|| panic!("the fast reader gave up on {text}"));
        assert_same(text, taken, reference(text));
        assert_same(text, read(text), reference(text));
    }
}

#[test]
fn results_the_fast_reader_gives_up_on_are_read_as_before() {
    for text in LEFT {
        assert!(fast(text).is_none(), "the fast reader took {text}");
        assert_same(text, read(text), reference(text));
    }
    // The errors say what is wrong, as `from_wire` says it.
    for (text, says) in [
        (
            r#"{"content":null}"#,
            "invalid type: null, expected a sequence",
        ),
        (
            r#"{"isError":"yes"}"#,
            "invalid type: string \"yes\", expected a boolean",
        ),
        (r#"{"x":1e400}"#, "number out of range"),
    ] {
        match read(text) {
            ToolRead::Invalid(e) => assert!(e.to_string().contains(says), "{text}: {e}"),
            other => panic!("{text}: {other:?}"),
        }
    }
    assert!(matches!(read("[1]"), ToolRead::Other));
    assert!(matches!(read("null"), ToolRead::Other));
}

#[test]
fn hostile_results_are_refused_or_read_without_a_panic() {
    // Deeper than any parser here will go: a clear error, no stack overflow.
    let deep = format!(
        r#"{{"structuredContent":{}1{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert!(matches!(read(&deep), ToolRead::Invalid(e) if e.to_string().contains("recursion")));
    let deep_block = format!(
        r#"{{"content":[{{"type":"text","text":"a","x":{}0{}}}]}}"#,
        "{\"a\":".repeat(5_000),
        "}".repeat(5_000)
    );
    assert!(matches!(read(&deep_block), ToolRead::Invalid(_)));
    let deep_kind = format!(
        r#"{{"content":[{{"type":{}0{}}}]}}"#,
        "[".repeat(5_000),
        "]".repeat(5_000)
    );
    assert!(matches!(read(&deep_kind), ToolRead::Invalid(_)));

    // Huge: a 4 MiB text, 20,000 blocks, a block and a result with 20,000 fields.
    let big = "x".repeat(4 << 20);
    let text = json!({"content": [{"type": "text", "text": big}]}).to_string();
    assert!(matches!(read(&text), ToolRead::Output(out) if out.text().len() == 4 << 20));
    let blocks: Vec<Value> = (0..20_000)
        .map(|i| json!({"type": "text", "text": i.to_string()}))
        .collect();
    let text = json!({ "content": blocks }).to_string();
    assert!(matches!(read(&text), ToolRead::Output(out) if out.content.len() == 20_000));
    let many: Map<String, Value> = (0..20_000).map(|i| (format!("k{i}"), json!(i))).collect();
    let mut block = many.clone();
    block.insert("type".into(), json!("text"));
    block.insert("text".into(), json!("t"));
    for text in [
        json!({"content": [block]}).to_string(),
        Value::Object(many).to_string(),
    ] {
        assert_same(&text, read(&text), reference(&text));
    }
}

/// A small deterministic generator (no dependency for this): blocks and results built from
/// a pool of names and values in random orders, compared with `from_wire` one by one.
#[test]
fn random_results_read_as_from_wire_reads_them() {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let names = [
        "type",
        "text",
        "data",
        "mimeType",
        "resource",
        "uri",
        "annotations",
        "_meta",
        "x",
    ];
    let values = [
        json!("text"),
        json!("image"),
        json!("audio"),
        json!("resource"),
        json!("resource_link"),
        json!("other"),
        json!("AA=="),
        json!({"uri": "u"}),
        json!(null),
        json!(3),
        json!([1, "a"]),
        json!(true),
    ];
    let top = [
        "content",
        "structuredContent",
        "isError",
        "resultType",
        "_meta",
        "y",
    ];
    let mut fast_taken = 0;
    for _ in 0..3_000 {
        let mut result = String::from("{");
        for field in 0..next(5) {
            if field > 0 {
                result.push(',');
            }
            let name = top[next(top.len())];
            let value = match name {
                "content" if next(4) > 0 => {
                    let blocks: Vec<String> = (0..next(4))
                        .map(|_| {
                            let fields: Vec<String> = (0..next(6))
                                .map(|_| {
                                    format!(
                                        "{}:{}",
                                        json!(names[next(names.len())]),
                                        values[next(values.len())]
                                    )
                                })
                                .collect();
                            format!("{{{}}}", fields.join(","))
                        })
                        .collect();
                    format!("[{}]", blocks.join(","))
                }
                "isError" if next(3) > 0 => json!(next(2) == 1).to_string(),
                "resultType" if next(3) == 0 => json!("input_required").to_string(),
                _ => values[next(values.len())].to_string(),
            };
            result.push_str(&format!("{}:{value}", json!(name)));
        }
        result.push('}');
        if fast(&result).is_some() {
            fast_taken += 1;
        }
        assert_same(&result, read(&result), reference(&result));
    }
    assert!(
        fast_taken > 500,
        "the fast reader took only {fast_taken} of 3,000"
    );
}
