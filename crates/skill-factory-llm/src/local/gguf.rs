//! Reading the header of a GGUF file: what a model is (architecture, quantization, context
//! length, chat template) without loading its weights, in plain Rust, so that `models list` and
//! the checks before loading work in every build.
//!
//! Only the metadata section is read; tensor data is never touched. Large metadata arrays (the
//! tokenizer's vocabulary) are stepped over.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use crate::request::LlmError;

/// The four bytes every GGUF file starts with.
const MAGIC: &[u8; 4] = b"GGUF";
/// A metadata string longer than this is taken as a corrupt file (chat templates are a few KB).
const MAX_STRING: u64 = 16 << 20;

/// What a GGUF file's header says about the model in it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GgufInfo {
    /// GGUF format version (2 or 3).
    pub version: u32,
    /// `general.architecture`: `llama`, `gemma3`, `qwen2`, ...
    pub architecture: String,
    /// `general.name`, when given.
    pub name: Option<String>,
    /// `general.size_label` (`135M`, `7B`), when given.
    pub size_label: Option<String>,
    /// The quantization of most weights, from `general.file_type` (`Q4_1`, `Q8_0`, `Q4_K_M`, ...).
    pub quantization: Option<String>,
    /// `<architecture>.context_length`: the context the model was trained with.
    pub context_length: Option<u64>,
    /// `tokenizer.chat_template`: the model's own Jinja chat template.
    pub chat_template: Option<String>,
    /// Number of tensors.
    pub tensor_count: u64,
}

/// Reads the header of the GGUF file at `path`. Errors name the path and what is wrong.
pub fn read_gguf_info(path: &Path) -> Result<GgufInfo, LlmError> {
    let file = File::open(path).map_err(|e| {
        let fix = if e.kind() == io::ErrorKind::NotFound {
            " (run `skill-factory models fetch` to install the default model, or give the path of any GGUF file)"
        } else {
            ""
        };
        LlmError::Config(format!(
            "cannot open model file {}: {e}{fix}",
            path.display()
        ))
    })?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    parse_header(&mut reader).map_err(|problem| {
        LlmError::Config(format!(
            "{} is not a usable GGUF model file: {problem} (the local provider reads GGUF files, as \
             made by llama.cpp; LM Studio and Ollama store their models in this format)",
            path.display()
        ))
    })
}

/// GGUF metadata value types.
mod kind {
    pub const U8: u32 = 0;
    pub const I8: u32 = 1;
    pub const U16: u32 = 2;
    pub const I16: u32 = 3;
    pub const U32: u32 = 4;
    pub const I32: u32 = 5;
    pub const F32: u32 = 6;
    pub const BOOL: u32 = 7;
    pub const STRING: u32 = 8;
    pub const ARRAY: u32 = 9;
    pub const U64: u32 = 10;
    pub const I64: u32 = 11;
    pub const F64: u32 = 12;
}

/// Why a file is not a usable GGUF model file. It is only ever shown inside the
/// [`LlmError::Config`] of [`read_gguf_info`], which names the file and what reads GGUF.
#[derive(Debug, thiserror::Error)]
enum GgufError {
    /// Not even the four bytes of the signature.
    #[error("the file is shorter than a GGUF header")]
    TooShort,
    /// Another kind of file (an HTML error page, a zip, safetensors).
    #[error("it does not start with the GGUF signature (found {:?})", String::from_utf8_lossy(.0))]
    NotGguf([u8; 4]),
    /// A format version this reader does not know.
    #[error("GGUF version {0} is not supported (versions 2 and 3 are)")]
    Version(u32),
    /// Without an architecture llama.cpp cannot load it, and nothing can describe it.
    #[error("its metadata has no general.architecture")]
    NoArchitecture,
    /// A metadata value of a type the format does not define.
    #[error("unknown metadata value type {0}")]
    ValueType(u32),
    /// A metadata array of elements of a type the format does not define.
    #[error("unknown metadata array element type {0}")]
    ElementType(u32),
    /// An array whose size in bytes overflows: a corrupt count.
    #[error("a metadata array is impossibly large")]
    HugeArray,
    /// An entry too large to seek over: a corrupt length.
    #[error("a metadata entry is impossibly large")]
    HugeEntry,
    /// A string longer than any real metadata string.
    #[error("a metadata string claims {0} bytes (corrupt file?)")]
    HugeString(u64),
    /// The file ends before its metadata does.
    #[error("the file ends inside its metadata (truncated download?)")]
    Truncated,
    /// Reading failed for another reason than the end of the file.
    #[error("read error: {0}")]
    Read(io::Error),
}

/// A metadata value, kept only as far as the listing needs it.
enum Value {
    Int(i128),
    Text(String),
    Other,
}

fn parse_header<R: Read + Seek>(r: &mut R) -> Result<GgufInfo, GgufError> {
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic).map_err(|_| GgufError::TooShort)?;
    if &magic != MAGIC {
        return Err(GgufError::NotGguf(magic));
    }
    let version = read_u32(r)?;
    if !(2..=3).contains(&version) {
        return Err(GgufError::Version(version));
    }
    let tensor_count = read_u64(r)?;
    let kv_count = read_u64(r)?;
    let mut info = GgufInfo {
        version,
        tensor_count,
        ..GgufInfo::default()
    };
    let mut file_type = None;
    let mut context_lengths: Vec<(String, u64)> = Vec::new();
    for _ in 0..kv_count {
        let key = read_string(r)?;
        let value_type = read_u32(r)?;
        let value = read_value(r, value_type)?;
        match (key.as_str(), value) {
            ("general.architecture", Value::Text(s)) => info.architecture = s,
            ("general.name", Value::Text(s)) => info.name = Some(s),
            ("general.size_label", Value::Text(s)) => info.size_label = Some(s),
            ("general.file_type", Value::Int(n)) => file_type = Some(n),
            ("tokenizer.chat_template", Value::Text(s)) => info.chat_template = Some(s),
            (k, Value::Int(n)) if k.ends_with(".context_length") => {
                if let Ok(n) = u64::try_from(n) {
                    context_lengths.push((k.trim_end_matches(".context_length").to_string(), n));
                }
            }
            _ => {}
        }
    }
    if info.architecture.is_empty() {
        return Err(GgufError::NoArchitecture);
    }
    info.context_length = context_lengths
        .iter()
        .find(|(arch, _)| *arch == info.architecture)
        .map(|(_, n)| *n);
    info.quantization = file_type.map(file_type_name);
    Ok(info)
}

fn read_value<R: Read + Seek>(r: &mut R, value_type: u32) -> Result<Value, GgufError> {
    Ok(match value_type {
        kind::U8 => Value::Int(i128::from(read_array::<1>(r)?[0])),
        kind::I8 => Value::Int(i128::from(i8::from_le_bytes(read_array::<1>(r)?))),
        kind::U16 => Value::Int(i128::from(u16::from_le_bytes(read_array::<2>(r)?))),
        kind::I16 => Value::Int(i128::from(i16::from_le_bytes(read_array::<2>(r)?))),
        kind::U32 => Value::Int(i128::from(read_u32(r)?)),
        kind::I32 => Value::Int(i128::from(i32::from_le_bytes(read_array::<4>(r)?))),
        kind::U64 => Value::Int(i128::from(read_u64(r)?)),
        kind::I64 => Value::Int(i128::from(i64::from_le_bytes(read_array::<8>(r)?))),
        kind::F32 => {
            read_array::<4>(r)?;
            Value::Other
        }
        kind::F64 => {
            read_array::<8>(r)?;
            Value::Other
        }
        kind::BOOL => {
            read_array::<1>(r)?;
            Value::Other
        }
        kind::STRING => Value::Text(read_string(r)?),
        kind::ARRAY => {
            let element_type = read_u32(r)?;
            let count = read_u64(r)?;
            skip_array(r, element_type, count)?;
            Value::Other
        }
        other => return Err(GgufError::ValueType(other)),
    })
}

/// Steps over an array without keeping it: fixed-size elements by seeking, strings one by one.
fn skip_array<R: Read + Seek>(r: &mut R, element_type: u32, count: u64) -> Result<(), GgufError> {
    let width: u64 = match element_type {
        kind::U8 | kind::I8 | kind::BOOL => 1,
        kind::U16 | kind::I16 => 2,
        kind::U32 | kind::I32 | kind::F32 => 4,
        kind::U64 | kind::I64 | kind::F64 => 8,
        kind::STRING => {
            for _ in 0..count {
                let len = read_u64(r)?;
                skip(r, len)?;
            }
            return Ok(());
        }
        kind::ARRAY => {
            for _ in 0..count {
                let inner = read_u32(r)?;
                let inner_count = read_u64(r)?;
                skip_array(r, inner, inner_count)?;
            }
            return Ok(());
        }
        other => return Err(GgufError::ElementType(other)),
    };
    let bytes = count.checked_mul(width).ok_or(GgufError::HugeArray)?;
    skip(r, bytes)
}

fn skip<R: Read + Seek>(r: &mut R, bytes: u64) -> Result<(), GgufError> {
    let offset = i64::try_from(bytes).map_err(|_| GgufError::HugeEntry)?;
    let before = r.stream_position().map_err(truncated)?;
    let after = r.seek(SeekFrom::Current(offset)).map_err(truncated)?;
    // Seeking past the end succeeds; the next read would fail with a less helpful message.
    let end = r.seek(SeekFrom::End(0)).map_err(truncated)?;
    if after > end || after < before {
        return Err(GgufError::Truncated);
    }
    r.seek(SeekFrom::Start(after)).map_err(truncated)?;
    Ok(())
}

fn read_string<R: Read>(r: &mut R) -> Result<String, GgufError> {
    let len = read_u64(r)?;
    if len > MAX_STRING {
        return Err(GgufError::HugeString(len));
    }
    let mut bytes = Vec::new();
    r.take(len).read_to_end(&mut bytes).map_err(truncated)?;
    if bytes.len() as u64 != len {
        return Err(GgufError::Truncated);
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn read_u32<R: Read>(r: &mut R) -> Result<u32, GgufError> {
    Ok(u32::from_le_bytes(read_array::<4>(r)?))
}

fn read_u64<R: Read>(r: &mut R) -> Result<u64, GgufError> {
    Ok(u64::from_le_bytes(read_array::<8>(r)?))
}

fn read_array<const N: usize>(r: &mut impl Read) -> Result<[u8; N], GgufError> {
    let mut buf = [0u8; N];
    r.read_exact(&mut buf).map_err(truncated)?;
    Ok(buf)
}

fn truncated(e: io::Error) -> GgufError {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        GgufError::Truncated
    } else {
        GgufError::Read(e)
    }
}

/// The name llama.cpp gives a `general.file_type` value (its `llama_ftype` enum).
fn file_type_name(file_type: i128) -> String {
    let name = match file_type {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        36 => "TQ1_0",
        37 => "TQ2_0",
        38 => "MXFP4_MOE",
        other => return format!("type {other}"),
    };
    name.to_string()
}

/// Bytes read from each end of a model file for its [`fingerprint`].
const FINGERPRINT_SPAN: u64 = 1 << 20;

/// A short identity of a model file's contents: the SHA-256 of its size, its first MiB (the
/// header: architecture, quantization, tokenizer) and its last MiB (weights), as 16 hex
/// digits. Two files with the same name but different weights get different fingerprints,
/// and a copy of a file anywhere gets the same one, without hashing gigabytes.
pub fn fingerprint(path: &Path) -> io::Result<String> {
    use sha2::{Digest, Sha256};
    let mut file = File::open(path)?;
    let size = file.metadata()?.len();
    let mut hasher = Sha256::new();
    hasher.update(size.to_le_bytes());
    let mut buffer = Vec::new();
    (&mut file)
        .take(FINGERPRINT_SPAN)
        .read_to_end(&mut buffer)?;
    hasher.update(&buffer);
    if size > FINGERPRINT_SPAN {
        buffer.clear();
        file.seek(SeekFrom::Start(
            size.saturating_sub(FINGERPRINT_SPAN).max(FINGERPRINT_SPAN),
        ))?;
        file.take(FINGERPRINT_SPAN).read_to_end(&mut buffer)?;
        hasher.update(&buffer);
    }
    Ok(hex::encode(&hasher.finalize()[..8]))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn a_fingerprint_follows_the_contents_not_the_name() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            path
        };
        let mut big = vec![7u8; 3 << 20];
        let a = write("model.gguf", &big);
        let copy = write("copy.gguf", &big);
        *big.last_mut().unwrap() = 8;
        let other_weights = write("other-model.gguf", &big);
        let small = write("small.gguf", b"GGUF tiny");
        let fp = |p: &Path| fingerprint(p).unwrap();
        assert_eq!(fp(&a), fp(&copy));
        assert_ne!(fp(&a), fp(&other_weights), "the last MiB differs");
        assert_eq!(fp(&a).len(), 16);
        assert_ne!(fp(&small), fp(&a));
        assert!(fingerprint(&dir.path().join("missing.gguf")).is_err());
    }

    /// Builds a GGUF header in memory: the tests need no model file.
    pub(crate) struct HeaderBuilder {
        bytes: Vec<u8>,
        count: u64,
    }

    impl HeaderBuilder {
        pub(crate) fn new() -> Self {
            HeaderBuilder {
                bytes: Vec::new(),
                count: 0,
            }
        }

        fn key(&mut self, key: &str, value_type: u32) {
            self.bytes.extend((key.len() as u64).to_le_bytes());
            self.bytes.extend(key.as_bytes());
            self.bytes.extend(value_type.to_le_bytes());
            self.count += 1;
        }

        pub(crate) fn string(mut self, key: &str, value: &str) -> Self {
            self.key(key, kind::STRING);
            self.bytes.extend((value.len() as u64).to_le_bytes());
            self.bytes.extend(value.as_bytes());
            self
        }

        pub(crate) fn u32(mut self, key: &str, value: u32) -> Self {
            self.key(key, kind::U32);
            self.bytes.extend(value.to_le_bytes());
            self
        }

        fn f32(mut self, key: &str, value: f32) -> Self {
            self.key(key, kind::F32);
            self.bytes.extend(value.to_le_bytes());
            self
        }

        fn strings(mut self, key: &str, values: &[&str]) -> Self {
            self.key(key, kind::ARRAY);
            self.bytes.extend(kind::STRING.to_le_bytes());
            self.bytes.extend((values.len() as u64).to_le_bytes());
            for v in values {
                self.bytes.extend((v.len() as u64).to_le_bytes());
                self.bytes.extend(v.as_bytes());
            }
            self
        }

        fn i32s(mut self, key: &str, values: &[i32]) -> Self {
            self.key(key, kind::ARRAY);
            self.bytes.extend(kind::I32.to_le_bytes());
            self.bytes.extend((values.len() as u64).to_le_bytes());
            for v in values {
                self.bytes.extend(v.to_le_bytes());
            }
            self
        }

        pub(crate) fn build(self) -> Vec<u8> {
            let mut out = b"GGUF".to_vec();
            out.extend(3u32.to_le_bytes());
            out.extend(7u64.to_le_bytes());
            out.extend(self.count.to_le_bytes());
            out.extend(self.bytes);
            out
        }
    }

    fn smollm_like() -> Vec<u8> {
        HeaderBuilder::new()
            .string("general.architecture", "llama")
            .string("general.name", "Smollm2 135M")
            .string("general.size_label", "135M")
            .u32("llama.context_length", 8192)
            .f32("llama.rope.freq_base", 100000.0)
            .u32("general.file_type", 3)
            .strings(
                "tokenizer.ggml.tokens",
                &["<|endoftext|>", "<|im_start|>", "a"],
            )
            .i32s("tokenizer.ggml.token_type", &[3, 3, 1])
            .string("tokenizer.chat_template", "{{ messages }}")
            .build()
    }

    #[test]
    fn header_gives_architecture_quantization_context_and_template() {
        let info = parse_header(&mut Cursor::new(smollm_like())).unwrap();
        assert_eq!(info.architecture, "llama");
        assert_eq!(info.name.as_deref(), Some("Smollm2 135M"));
        assert_eq!(info.size_label.as_deref(), Some("135M"));
        assert_eq!(info.quantization.as_deref(), Some("Q4_1"));
        assert_eq!(info.context_length, Some(8192));
        assert_eq!(info.chat_template.as_deref(), Some("{{ messages }}"));
        assert_eq!((info.version, info.tensor_count), (3, 7));
    }

    #[test]
    fn context_length_is_the_one_of_the_models_own_architecture() {
        let bytes = HeaderBuilder::new()
            .u32("clip.context_length", 77)
            .string("general.architecture", "gemma3")
            .u32("gemma3.context_length", 32768)
            .build();
        let info = parse_header(&mut Cursor::new(bytes)).unwrap();
        assert_eq!(info.context_length, Some(32768));
        assert_eq!(info.quantization, None);
    }

    #[test]
    fn a_file_that_is_not_gguf_says_so() {
        let error = parse_header(&mut Cursor::new(b"PK\x03\x04 a zip file".to_vec()))
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            r#"it does not start with the GGUF signature (found "PK\u{3}\u{4}")"#
        );
        let error = parse_header(&mut Cursor::new(b"GG".to_vec()))
            .unwrap_err()
            .to_string();
        assert!(error.contains("shorter than a GGUF header"), "{error}");
    }

    #[test]
    fn a_truncated_header_is_reported_not_panicked_on() {
        let bytes = smollm_like();
        for cut in [20, 40, bytes.len() / 2, bytes.len() - 3] {
            let error = parse_header(&mut Cursor::new(bytes[..cut].to_vec()))
                .unwrap_err()
                .to_string();
            assert!(
                error.contains("truncated") || error.contains("ends"),
                "cut {cut}: {error}"
            );
        }
    }

    #[test]
    fn unsupported_versions_and_missing_architecture_are_errors() {
        let mut bytes = smollm_like();
        bytes[4] = 9;
        assert!(
            parse_header(&mut Cursor::new(bytes))
                .unwrap_err()
                .to_string()
                .contains("version 9")
        );
        let bytes = HeaderBuilder::new().u32("general.file_type", 7).build();
        assert!(
            parse_header(&mut Cursor::new(bytes))
                .unwrap_err()
                .to_string()
                .contains("general.architecture")
        );
    }

    #[test]
    fn unknown_file_types_are_shown_by_number() {
        assert_eq!(file_type_name(15), "Q4_K_M");
        assert_eq!(file_type_name(99), "type 99");
    }

    #[test]
    fn missing_file_error_names_the_path_and_the_fetch_command() {
        let error = read_gguf_info(Path::new("no/such/model.gguf"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("no/such/model.gguf"), "{error}");
        assert!(error.contains("skill-factory models fetch"), "{error}");
    }
}
