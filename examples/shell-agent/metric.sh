#!/bin/sh
# Scores one slug for the `command` metric.
#
# Skill Factory sends one JSON object on stdin,
#   {"task_id": "...", "input": "...", "output": "...", "expected": "...", "metadata": {...}}
# and reads one JSON object back on stdout:
#   {"score": <0..1>, "feedback": "<what is wrong, for the optimizer>"}
#
# Written in POSIX sh + awk so that the example needs nothing installed. In Python the same
# metric reads `json.load(sys.stdin)` and ends with `print(json.dumps({...}))`.
exec awk -v q="'" '
# The text of the string field `key` of the (one-line, compact) JSON object.
function field(json, key,    at, i, c, out) {
    at = index(json, "\"" key "\":\"")
    if (at == 0) return ""
    out = ""
    for (i = at + length(key) + 4; i <= length(json); i++) {
        c = substr(json, i, 1)
        if (c == "\"") break
        if (c == "\\") {
            i++
            c = substr(json, i, 1)
            if (c == "n") c = "\n"
            else if (c == "t") c = "\t"
            else if (c == "u") { c = "?"; i += 4 }
        }
        out = out c
    }
    return out
}
function quote(text) {
    gsub(/\\/, "\\\\", text)
    gsub(/"/, "\\\"", text)
    gsub(/\n/, "\\n", text)
    return text
}
function rule(broken, advice) {
    if (broken) { problems = problems (problems == "" ? "" : "; ") advice; failed++ }
}
{ json = json $0 }
END {
    got = field(json, "output")
    want = field(json, "expected")
    if (got == want) {
        printf "{\"score\": 1.0, \"feedback\": \"exact slug\"}\n"
        exit 0
    }
    failed = 0
    rule(got ~ /[A-Z]/, "use lower case only")
    rule(got ~ / /, "replace spaces with hyphens")
    rule(got ~ /[^A-Za-z0-9 -]/, "drop punctuation")
    rule(got ~ /--/, "collapse repeated hyphens")
    rule(got ~ /^-|-$/, "trim hyphens from both ends")
    if (problems == "") problems = "the words differ"
    score = 0.8 * (5 - failed) / 5
    feedback = "expected " q want q ", got " q got q ": " problems
    printf "{\"score\": %.2f, \"feedback\": \"%s\"}\n", score, quote(feedback)
}'
