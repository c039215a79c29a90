"""Regenerates yaml_cases.json: expected SKILL.md frontmatter dumps from the real PyYAML.

The Python skill-factory serializes frontmatter with
`yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True)`; `yaml::dump` must match it
byte for byte. Run with any Python that has PyYAML 6 installed:

    python generate_yaml.py > yaml_cases.json

The output is deterministic (fixed random seed). Tests read only yaml_cases.json.
"""

import json
import random
import sys

import yaml

cases = []


def case(name, mapping):
    expected = yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True)
    cases.append({"name": name, "input": mapping, "expected": expected})


# Appendix A.3 of the reference spec: the shipped seed skills.
case("invoice_extractor_seed", {
    "name": "invoice-extractor",
    "description": "Extract key fields from messy invoice or receipt text into structured JSON. "
    "Use when the user pastes an invoice, receipt, or bill and wants the vendor, date, total, "
    "and currency pulled out.",
})
case("ticket_classifier_seed", {
    "name": "ticket-classifier",
    "description": "Classify a customer support message into a single category. Use when "
    "routing an incoming support ticket, email, or chat message to the right queue.",
})

# Every length around the 80-column fold, with several word lengths.
for word in ["ab", "abcd", "abcdefg", "x"]:
    for length in range(55, 110):
        text = " ".join([word] * 60)[:length].rstrip()
        case(f"fold_{len(word)}_{length}", {"name": "s", "description": text})
case("fold_long_word", {"name": "s", "description": "a" * 200})
case("fold_long_words", {"name": "s", "description": ("b" * 90 + " ") * 3 + "end"})
case("fold_double_spaces", {"name": "s", "description": "word  " * 30 + "end"})
case("fold_triple_space_at_edge", {"name": "s", "description": "x" * 66 + "   " + "y" * 20 + " z"})
case("fold_after_quote_escape", {"name": "s", "description": "it's " * 40})
case("fold_single_quoted_long", {"name": "s", "description": "yes: " + "lorem ipsum " * 20})
case("fold_double_quoted_tabs", {"name": "s", "description": "tab\there " * 30})
case("fold_double_quoted_spaces_at_edge", {"name": "s", "description": "\t" + "a" * 75 + "  b" * 10})
case("fold_double_quoted_escapes_at_edge", {"name": "s", "description": "\t" + "é\x07" * 60})
case("fold_multiline", {"name": "s", "description": "first line is short\n" + "second " * 30 + "\nthird"})
case("fold_nested", {"name": "s", "metadata": {"summary": "nested " * 30, "deeper": {"text": "deep " * 30}}})
case("fold_in_list", {"name": "s", "items": ["list item " * 20, ["inner " * 25]]})
case("fold_unicode_width", {"name": "s", "description": "é" * 70 + " " + "ü" * 5 + " " + "中文" * 10 + " end"})

words = [
    "", " ", "yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE",
    "on", "On", "ON", "off", "Off", "OFF", "y", "n", "Y", "N", "yEs", "tRUE", "null", "Null", "NULL",
    "~", "nULL", "123", "-5", "+7", "0", "-0", "0755", "08", "0o17", "0b101", "0x1F", "0xZ", "1_000",
    "1:30", "1:30.5", "190:20:30", "1.5", "1.", ".5", "+.5", "1e3", "1E3", "1e-3", "1.5e3", "1.0e+3",
    ".inf", "-.Inf", "+.INF", ".nan", ".NaN", "+.nan", "inf", "nan", "2001-12-14", "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 -5", "2001-1-1", "<<", "=", "My Skill!", "does: things", "does:things",
    "a #b", "a#b", "a, b", "[a]", "{a}", "end:", "end :", "trailing ", " leading", "a  b", "---", "--- x",
    "...", "... x", "--", "-", "- x", "-x", "?", "? x", "?x", ":", ": x", ":x", ",x", "[x", "]x", "{x",
    "}x", "#x", "&x", "*x", "!x", "|x", ">x", "'x", '"x', "%x", "@x", "`x", "x'", 'x"', "it's",
    '"quoted"', "'single'", "back\\slash", "é", "中文", "😀", "emoji 😀 inside", "nb\xa0sp", "zw\u200bsp",
    "line\u2028sep", "next\x85line", "bom\ufeff", "\ufeffbom", "a\nb", "a\n\nb", "a\n", "\na", "a \nb",
    "a\n b", "a\r\nb", "a\rb", "a\tb", "\ta", "a\t", "bell\x07", "esc\x1b", "nul\x00", "del\x7f",
    "c1\x80", "private\ue000", "astral\U0001F600", "max\U0010FFFF", "nonchar\ufffe", "x\u2029y",
]
for index, word in enumerate(words):
    case(f"word_{index:03}", {"name": "s", "description": word, "extra": word})

case("numbers", {
    "name": "s", "zero": 0, "negative": -5, "big": 2**63 - 1, "bigger": 2**64 - 1, "float": 1.5,
    "float_zero": 0.0, "negative_zero": -0.0, "e16": 1e16, "e15": 1e15, "small": 1e-05,
    "tenth_sum": 0.1 + 0.2, "huge": 1e300, "tiny": 5e-324, "mixed": 123456789.123, "neg_exp": -1.25e-07,
})
case("bools_and_null", {"name": "s", "yes": True, "no": False, "nothing": None})
case("metadata_and_tools", {
    "name": "pdf", "description": "Work with PDFs.", "license": "MIT",
    "metadata": {"author": "x", "version": "1.0"}, "allowed-tools": ["Read", "Bash"],
})
case("nesting", {
    "name": "s",
    "list_of_maps": [{"a": 1, "b": [1, 2]}, {"c": {"d": "e"}}, {}],
    "list_of_lists": [[1, [2, []]], ["x"], []],
    "map_of_lists": {"k": ["v", {"w": None}], "e": [], "m": {}},
    "empty_list": [], "empty_map": {},
})
case("keys_needing_quotes", {
    "name": "s", "yes": 1, "123": 2, "a: b": 3, "-x": 4, "key with spaces": 5, "ключ": 6, "": 7,
    "k" * 122: 8, "k" * 123: 9, "multi\nline": 10, "trail ": 11, "tab\tkey": 12, "null": 13,
    "#hash": 14, "a#b": 15, "it's": 16, "line\u2028sep": 17,
})
case("long_key_with_nested_values", {"name": "s", "q" * 130: {"a": [1, 2]}, "m\nk": ["x", {"y": "z"}]})

rng = random.Random(20261129)
alphabet = (
    list("abcdefghij") + [" "] * 8 + list(":#-?'\"\\,[]{}&*!|>%@`.0123456789") + ["\n", "\t", "\r"]
    + ["é", "中", "😀", "\xa0", "\u2028", "\x85", "\ufeff", "\x07"]
)
for index in range(250):
    length = rng.choice([0, 1, 2, 3, 5, 10, 30, 60, 75, 80, 85, 100, 150, 200])
    text = "".join(rng.choice(alphabet) for _ in range(length))
    mapping = {"name": "s", "description": text}
    if index % 4 == 1:
        mapping["nested"] = {"value": text, "list": [text]}
    if index % 4 == 2 and length < 140:
        mapping = {"name": "s", text: "value", "after": text}
    case(f"random_{index:03}", mapping)

# One case per line keeps diffs readable when PyYAML or the cases change.
sys.stdout.write("[\n" + ",\n".join(json.dumps(c, ensure_ascii=True) for c in cases) + "\n]\n")
