"""Regenerates random_cpython.json and json_cases.json from CPython and Node.js.

Run from this folder with a Python 3.11 and `node` on PATH:  python generate.py
The Rust tests only read the JSON files written here; they never need Python or Node.
"""

import json
import math
import random
import struct
import subprocess


SEEDS = [0, 1, 7, 42, 2**32 + 5, 2**64 - 1]


def float_bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def sample_branch(n, k):
    setsize = 21
    if k > 5:
        setsize += 4 ** math.ceil(math.log(k * 3, 4))
    return "pool" if n <= setsize else "set"


def random_cases():
    cases = []
    for seed in SEEDS:
        rng = random.Random(seed)
        words = []
        for index in range(1300):
            value = rng.getrandbits(32)
            if index < 10 or 620 <= index < 630 or 1240 <= index < 1250:
                words.append([index, value])

        rng = random.Random(seed)
        bits = []
        for _ in range(3):
            for k in [1, 7, 31, 32, 33, 40, 63, 64]:
                bits.append([k, rng.getrandbits(k)])

        rng = random.Random(seed)
        below = []
        for n in [1, 2, 3, 10, 100, 2**31, 2**32, 2**32 + 1, 2**40 + 3, 2**63 + 5, 2**64 - 1]:
            for _ in range(3):
                below.append([n, rng._randbelow(n)])

        rng = random.Random(seed)
        floats = [float_bits(rng.random()) for _ in range(8)]

        rng = random.Random(seed)
        shuffles = []
        for n in [0, 1, 2, 5, 10, 50]:
            items = list(range(n))
            rng.shuffle(items)
            shuffles.append(items)

        rng = random.Random(seed)
        samples = []
        for n, k in [(8, 2), (10, 4), (15, 3), (21, 5), (20, 10), (100, 30), (0, 0),
                     (22, 5), (100, 5), (1000, 30), (300, 5), (50, 6), (300, 100)]:
            samples.append({"n": n, "k": k, "branch": sample_branch(n, k),
                            "picked": rng.sample(range(n), k)})

        cases.append({"seed": seed, "words": words, "getrandbits": bits, "randbelow": below,
                      "random_bits": floats, "shuffles": shuffles, "samples": samples})
    return cases


def json_sources():
    rng = random.Random(2024)
    sources = [
        '{"total": 262.50, "vendor": "Café Noël", "items": [], "meta": {}}',
        '[1e16, 1e-5, 10.0, 0.1, 0.0001, 1e15, 9999999999999998.0, 1e21, 1e-7, 1.5e-6]',
        '[5e-324, 1.7976931348623157e308, 2.2250738585072014e-308, 123e20, -0.5, 0.3]',
        '[0, -1, 123456789012345678, 9223372036854775807, 9223372036854775808,'
        ' 18446744073709551615, -9223372036854775808, 9007199254740993]',
        '[true, false, null, "", [], {}, [[]], [{}], {"a": {"b": {"c": [1, [2, [3]]]}}}]',
        json.dumps("".join(chr(c) for c in range(0x20)) + "\x7f/\"\\\u2028\u2029é😀\uffff"),
        '{"b": 1, "a": 2, "é": 3, "Z": 4, "😀": 5, "\uffff": 6, "10": 7, "2": 8, "01": 9,'
        ' "-1": 10, "4294967294": 11, "4294967295": 12, "": 13}',
        '{"dup": 1, "other": 2, "dup": 3}',
        '"plain text"',
        '3.14159',
        '[0.1, 0.2, 0.30000000000000004, 100.0, 1.0, 2.5e-5, 12345.678e3]',
    ]
    # Random finite doubles of every magnitude, written the way other tools write them.
    numbers = []
    while len(numbers) < 400:
        x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if math.isfinite(x):
            numbers.append(x)
    numbers += [rng.uniform(-1e6, 1e6) for _ in range(200)]
    numbers += [round(rng.uniform(0, 1000), 2) for _ in range(200)]
    sources.append(json.dumps(numbers))
    sources.append("[" + ", ".join(f"{x:.17g}" for x in numbers[:300]) + "]")
    return sources


def json_cases():
    sources = json_sources()
    js = subprocess.run(
        ["node", "-e",
         "const s=JSON.parse(require('fs').readFileSync(0,'utf8'));"
         "process.stdout.write(JSON.stringify(s.map(t=>JSON.stringify(JSON.parse(t)))))"],
        input=json.dumps(sources), capture_output=True, text=True, check=True,
    )
    js_outputs = json.loads(js.stdout)
    cases = []
    for source, js_output in zip(sources, js_outputs):
        value = json.loads(source)
        cases.append({
            "json": source,
            "pretty": json.dumps(value, indent=2, ensure_ascii=False),
            "pretty_ascii": json.dumps(value, indent=2),
            "default": json.dumps(value),
            "canonical": json.dumps(value, sort_keys=True, separators=(",", ":"),
                                    ensure_ascii=False),
            "js": js_output,
        })
    return cases


def write(name, value):
    with open(name, "w", encoding="utf-8") as out:
        json.dump(value, out, ensure_ascii=False, indent=1)
        out.write("\n")


write("random_cpython.json", random_cases())
write("json_cases.json", json_cases())
