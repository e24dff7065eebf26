//! Command-line definitions and one function per subcommand.
//!
//! Exit codes: 0 success; 1 the check ran and found a problem (inexact arm,
//! failed validation, regression); 2 bad input; 3 environment or internal
//! failure; 130 / 143 stopped by SIGINT / SIGTERM (resumable).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::arms::{registry, Backend};
use crate::env_manifest::{utc_now_compact, EnvManifest};
use crate::error::{GvrError, Result};
use crate::grid::Selection;
use crate::report::{AaOptions, RegressOptions, ReportOptions};
use crate::run::devices::{self, FanOutOutcome, WorkerSpec};
use crate::run::peer::{self, Peer, PeerConfig};
use crate::run::{self, CertifyConfig, GridConfig};
use crate::synth::SynthOptions;
use crate::timing::gpu::TimingChoice;
use crate::timing::Protocol;

#[derive(Debug, Parser)]
#[command(
    name = "gvr-bench",
    // The commit rides along so a device log names the binary it ran.
    version = concat!(env!("CARGO_PKG_VERSION"), " (git ", env!("GVR_BUILD_GIT_SHA"), ")"),
    about = "Benchmark and certify exact top-K decode kernels"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Expose the test-only arms (integration tests of failure paths).
    #[arg(long, global = true, hide = true)]
    pub test_arms: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Time every selected case on every arm and check each output.
    Grid(GridArgs),
    /// Exactness only (no timing): selected cases plus the adversarial suite.
    Certify(CertifyArgs),
    /// Where one launch of the self-sampling kernels spends its time: each
    /// selected case on a probe build (clock stamps at every phase, per CTA).
    Phases(PhasesArgs),
    /// Make, inspect or validate capture sets.
    Capture {
        #[command(subcommand)]
        action: CaptureCommand,
    },
    /// Tables and plots from a run directory.
    Report(ReportOptions),
    /// A/A noise floor from a run made with `grid --aa ARM`.
    Aa(AaOptions),
    /// Compare a candidate run against a baseline; exit 1 on regression.
    Regress(RegressOptions),
    /// List the arms this binary knows.
    Arms,
    /// List every knob: kind, what it acts on, values, default.
    Knobs,
    /// Merge shard runs into one run directory.
    Merge(MergeArgs),
    /// Run an experiment file (selection × arms × knob variants) and print
    /// the same-run A/B table of every variant against the base variant.
    Experiment(ExperimentArgs),
    /// GPU runtime checks.
    Gpu {
        #[command(subcommand)]
        action: GpuCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum GpuCommand {
    /// Open the device, print its facts, build every kernel (reporting
    /// compilations vs cache hits), time the flush and an empty kernel.
    Info {
        /// CUDA device ordinal.
        #[arg(long, default_value_t = 0)]
        device: usize,
    },
}

#[derive(Debug, Subcommand)]
pub enum CaptureCommand {
    /// Generate a synthetic capture set.
    Synth(SynthOptions),
    /// Describe a capture set or one cell file.
    Inspect {
        /// Capture directory or cell file.
        path: PathBuf,
    },
    /// Check a capture set against the calibration gates; exit 1 if a gate fails.
    Validate {
        /// Capture directory.
        path: PathBuf,
    },
}

/// Where the cases come from (grid, certify, phases): a capture set, an
/// optional grid file, and the selection flags.
#[derive(Debug, Clone, Args)]
pub struct CaseArgs {
    /// Capture set directory.
    #[arg(long, default_value = "captures/sample")]
    pub captures: PathBuf,
    /// Grid file (CSV of cells); default: every cell of the capture set.
    #[arg(long)]
    pub grid: Option<PathBuf>,
    #[command(flatten)]
    pub selection: Selection,
    #[command(flatten)]
    pub tune: TuneArgs,
}

/// Knob values for the run's arms (grid, certify, phases).
#[derive(Debug, Clone, Default, Args)]
pub struct TuneArgs {
    /// Set a knob for every arm it acts on (`gvr-bench knobs` lists them);
    /// repeatable, applied after --tune.
    #[arg(long = "knob", value_name = "NAME=VALUE")]
    pub knobs: Vec<String>,
    /// A TOML file of knob values, one `NAME = value` per line.
    #[arg(long, value_name = "FILE.toml")]
    pub tune: Option<PathBuf>,
}

impl TuneArgs {
    /// The knobs every arm of the run gets (no variants).
    pub fn tunings(&self) -> Result<registry::Tunings> {
        Ok(registry::Tunings {
            base: crate::topk::Tuning::from_args(self.tune.as_deref(), &self.knobs)?,
            variants: Default::default(),
        })
    }
}

#[derive(Debug, Clone, Args)]
pub struct GridArgs {
    #[command(flatten)]
    pub cases: CaseArgs,
    /// Comma-separated arms (see `gvr-bench arms`); default: all GPU arms, or
    /// the CPU engines when there is no GPU.
    #[arg(long)]
    pub arms: Option<String>,
    /// Run directory to create; default runs/<UTC timestamp>.
    #[arg(long, conflicts_with = "resume")]
    pub out: Option<PathBuf>,
    /// Continue an interrupted run (its original options are reused).
    #[arg(long, value_name = "RUN_DIR")]
    pub resume: Option<PathBuf>,
    /// Untimed calls before measuring.
    #[arg(long, default_value_t = 10)]
    pub warmup: usize,
    /// Timed reps with a warm L2.
    #[arg(long, default_value_t = 5)]
    pub warm_reps: usize,
    /// Timed reps with the L2 flushed before each (the published statistic).
    #[arg(long, default_value_t = 10)]
    pub cold_reps: usize,
    /// Size of the L2 flush write, MiB.
    #[arg(long, default_value_t = 512)]
    pub flush_mib: usize,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Use the CPU engines even if a GPU is present.
    #[arg(long)]
    pub cpu: bool,
    /// A/A noise floor: run ARM twice (ARM and ARM#2), interleaved.
    #[arg(long, value_name = "ARM")]
    pub aa: Option<String>,
    /// Record a memory-bandwidth probe in the run manifest.
    #[arg(long)]
    pub bandwidth: bool,
    /// Also time each case's latency floor (read the rows once, meet once,
    /// write k indices: no selection) under several launch shapes, into
    /// floor.jsonl; `report` then compares every arm with it. GPU only.
    #[arg(long)]
    pub floor: bool,
    /// Do not print the report at the end.
    #[arg(long)]
    pub no_report: bool,
    /// After our arms, time library peers on the same cases, same protocol
    /// and same timing method, and join them into the run, e.g.
    /// `torch,flashinfer` (`torch`: torch.topk(sorted=False), arm torch;
    /// `flashinfer`: flashinfer.top_k, arms fi-auto, fi-cub, fi-filtered,
    /// fi-radix), via scripts/peer.py; needs python3 with torch, numpy,
    /// safetensors (and flashinfer).
    #[arg(long, value_enum, value_name = "PEERS", value_delimiter = ',')]
    pub peer: Vec<Peer>,
    /// The Python interpreter that runs the peers.
    #[arg(long, value_name = "PATH", default_value = "python3")]
    pub python: PathBuf,
    /// The peer script [default: scripts/peer.py].
    #[arg(long, value_name = "PATH")]
    pub peer_script: Option<PathBuf>,
    /// `real` (the libraries) or `numpy` (the script's host stand-in, for
    /// testing the plumbing without a GPU).
    #[arg(long, value_name = "BACKEND", default_value = "real", hide = true)]
    pub peer_backend: String,
    /// How every GPU arm and peer is timed: `cupti` (kernel time, the
    /// headline: CUPTI kernel records, all kernels of one call summed),
    /// `graph` (CUDA-graph replay between events; audited arms only),
    /// `events` (CUDA events around eager launches), `auto` (CUPTI, else
    /// events) [default: auto].
    #[arg(long, value_enum, value_name = "METHOD")]
    pub timing: Option<TimingChoice>,
    /// One worker process per listed GPU, each on a disjoint shard
    /// (`RUN/shards/<i>`), merged into the run when all finish, e.g. `0,1,2,3`.
    #[arg(long, value_name = "LIST")]
    pub devices: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct CertifyArgs {
    #[command(flatten)]
    pub cases: CaseArgs,
    /// Comma-separated arms; default as for `grid`.
    #[arg(long)]
    pub arms: Option<String>,
    /// Skip the adversarial suite.
    #[arg(long)]
    pub no_adversarial: bool,
    /// Also run this many randomized batches per K (batch size, row length,
    /// generator, hazard and hint mode drawn from each batch's seed); a
    /// failure names its seed.
    #[arg(long, default_value_t = 0, value_name = "ROUNDS")]
    pub soak: usize,
    /// Seed of the first soak batch; batch i uses SEED + i, so
    /// `--soak 1 --soak-seed SEED` replays one batch.
    #[arg(long, default_value_t = 0, value_name = "SEED")]
    pub soak_seed: u64,
    /// Fill each row's pad with +3e38 so reads past n are caught.
    #[arg(long)]
    pub poison_pad: bool,
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Use the CPU engines even if a GPU is present.
    #[arg(long)]
    pub cpu: bool,
}

#[derive(Debug, Clone, Args)]
pub struct PhasesArgs {
    #[command(flatten)]
    pub cases: CaseArgs,
    /// Comma-separated self-sampling arms (ss, ss-main, ss-reg, ss-clus,
    /// ss-regclus, ss-varlen, ...).
    #[arg(long, default_value = "ss")]
    pub arms: String,
    /// Probed launches per case and arm (each after an L2 flush).
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Cold reps timing the probe build's kernel.
    #[arg(long, default_value_t = 10)]
    pub cold_reps: usize,
    /// Size of the L2 flush write, MiB.
    #[arg(long, default_value_t = 512)]
    pub flush_mib: usize,
    /// Directory for phases.jsonl (every CTA statistic, streamed) and phases.md.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long, default_value_t = 0)]
    pub device: usize,
}

#[derive(Debug, Clone, Args)]
pub struct ExperimentArgs {
    /// The experiment file (TOML; `gvr-bench experiment --help` and
    /// experiments/*.toml show the format).
    pub file: PathBuf,
    /// Run directory to create; default runs/<UTC timestamp>.
    #[arg(long, conflicts_with = "resume")]
    pub out: Option<PathBuf>,
    /// Continue an interrupted experiment run (same file).
    #[arg(long, value_name = "RUN_DIR")]
    pub resume: Option<PathBuf>,
    /// Untimed calls before measuring.
    #[arg(long, default_value_t = 10)]
    pub warmup: usize,
    /// Timed reps with a warm L2.
    #[arg(long, default_value_t = 5)]
    pub warm_reps: usize,
    /// Timed reps with the L2 flushed before each.
    #[arg(long, default_value_t = 10)]
    pub cold_reps: usize,
    /// Size of the L2 flush write, MiB.
    #[arg(long, default_value_t = 512)]
    pub flush_mib: usize,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Use the CPU engines even if a GPU is present.
    #[arg(long)]
    pub cpu: bool,
}

#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// Shard run directories.
    #[arg(required = true, num_args = 1..)]
    pub runs: Vec<PathBuf>,
    /// Output run directory.
    #[arg(long)]
    pub out: PathBuf,
}

/// Parse, run, map errors to exit codes. Prints one `error:` line (and at
/// most one `hint:` line) on failure.
pub fn main() -> i32 {
    init_tracing();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return report_parse_error(&e),
    };
    let takes_cpu = takes_cpu_flag(&cli.command);
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", one_line(&e.to_string()));
            if let Some(hint) = hint_for(&e, takes_cpu) {
                eprintln!("hint: {hint}");
            }
            e.exit_code()
        }
    }
}

/// Help and version go out as clap renders them; a usage mistake becomes one
/// `error:` line plus one `hint:` line (clap's tip, or where to get help).
fn report_parse_error(e: &clap::Error) -> i32 {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.use_stderr() { 2 } else { 0 };
    }
    let (error, hint) = compact_parse_error(&e.render().to_string());
    eprintln!("{error}");
    eprintln!("hint: {hint}");
    2
}

/// (the `error:` line, a hint) from clap's multi-line rendering.
fn compact_parse_error(rendered: &str) -> (String, String) {
    let error = rendered
        .lines()
        .find(|l| l.starts_with("error:"))
        .map(one_line)
        .unwrap_or_else(|| format!("error: {}", one_line(rendered)));
    let hint = rendered
        .lines()
        .find_map(|l| l.trim().strip_prefix("tip:"))
        .map(|t| t.trim().to_string())
        .unwrap_or_else(|| "add --help to the command to see its options".to_string());
    (error, hint)
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `command` has a `--cpu` flag, so a GPU error may suggest it.
fn takes_cpu_flag(command: &Command) -> bool {
    matches!(
        command,
        Command::Grid(_) | Command::Certify(_) | Command::Experiment(_)
    )
}

fn hint_for(e: &GvrError, takes_cpu: bool) -> Option<String> {
    match e {
        GvrError::Gpu(m) if m.ends_with(run::phases::NEEDS_GPU) => None,
        GvrError::Gpu(_) if takes_cpu => Some("pass --cpu to run the CPU engines".into()),
        GvrError::Gpu(_) => {
            Some("this command needs a CUDA device and the NVIDIA driver (libcuda)".into())
        }
        GvrError::Usage(m) if m.contains("unknown arm") => {
            Some("`gvr-bench arms` lists every arm".into())
        }
        GvrError::Input { field, .. } if field == "captures" => {
            Some("`gvr-bench capture synth --help` makes a synthetic capture set".into())
        }
        _ => None,
    }
}

pub fn dispatch(cli: Cli) -> Result<i32> {
    if cli.test_arms {
        registry::enable_test_arms();
    }
    match cli.command {
        Command::Grid(args) => cmd_grid(args),
        Command::Certify(args) => cmd_certify(args),
        Command::Phases(args) => cmd_phases(args),
        Command::Capture { action } => cmd_capture(action),
        Command::Report(opts) => {
            println!("{}", crate::report::report(&opts)?);
            Ok(0)
        }
        Command::Aa(opts) => {
            println!("{}", crate::report::aa(&opts)?);
            Ok(0)
        }
        Command::Regress(opts) => {
            let verdict = crate::report::regress(&opts)?;
            println!("{}", verdict.markdown);
            Ok(if verdict.regressed { 1 } else { 0 })
        }
        Command::Arms => {
            print!("{}", arms_table());
            Ok(0)
        }
        Command::Experiment(args) => cmd_experiment(args),
        Command::Knobs => {
            print!("{}", crate::topk::tuning::knobs_table());
            Ok(0)
        }
        Command::Gpu {
            action: GpuCommand::Info { device },
        } => {
            println!("{}", crate::run::selfcheck::gpu_selfcheck_on(device)?);
            Ok(0)
        }
        Command::Merge(args) => {
            let outcome = run::merge(&args.runs, &args.out)?;
            let floors = if outcome.floors > 0 {
                format!(" and {} latency floors", outcome.floors)
            } else {
                String::new()
            };
            println!(
                "merged {} runs: {} records over {} cases{floors} into {}",
                args.runs.len(),
                outcome.records,
                outcome.cases,
                args.out.display()
            );
            Ok(0)
        }
    }
}

fn cmd_experiment(args: ExperimentArgs) -> Result<i32> {
    if let Some(dir) = &args.resume {
        check_resume_dir(dir)?;
    }
    let experiment = run::experiment::Experiment::read(&args.file)?;
    if args.cold_reps == 0 {
        return Err(GvrError::Usage("--cold-reps must be at least 1".into()));
    }
    let run_dir = match (&args.resume, &args.out) {
        (Some(dir), _) => dir.clone(),
        (None, Some(out)) => out.clone(),
        (None, None) => PathBuf::from("runs").join(utc_now_compact()),
    };
    let protocol = Protocol {
        warmup: args.warmup,
        warm_reps: args.warm_reps,
        cold_reps: args.cold_reps,
        flush_bytes: args.flush_mib << 20,
    };
    let (outcome, table) = experiment.run(
        &run_dir,
        args.resume.is_some(),
        protocol,
        args.device,
        args.cpu,
    )?;
    println!("{table}");
    eprintln!(
        "{} records in {} ({} inexact); the table is also in {}",
        outcome.records_written,
        run_dir.join(crate::record::RESULTS_FILE).display(),
        outcome.inexact,
        run_dir.join("experiment.md").display()
    );
    Ok(if outcome.interrupted {
        run::signals::exit_code(outcome.stop_signal)
    } else if outcome.inexact > 0 {
        1
    } else {
        0
    })
}

fn parse_arms(list: Option<&str>) -> Result<Option<Vec<String>>> {
    list.map(registry::parse_arm_list).transpose()
}

/// `--resume DIR` reuses the options of the run being resumed: they are
/// re-parsed from the command line stored in its manifest.
/// Refuse `--resume DIR` unless DIR is a run directory: one with a
/// manifest.json that has a `tool_version` (a capture set's manifest has none).
fn check_resume_dir(dir: &std::path::Path) -> Result<()> {
    if !dir.exists() {
        return Err(GvrError::Usage(format!(
            "--resume: no run at {}",
            dir.display()
        )));
    }
    let is_run = std::fs::read_to_string(dir.join(crate::env_manifest::MANIFEST_FILE))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .is_some_and(|v| v.get("tool_version").is_some());
    if !is_run {
        return Err(GvrError::Usage(format!(
            "--resume: {} is not a run directory (no manifest.json with tool_version); did you mean --captures?",
            dir.display()
        )));
    }
    Ok(())
}

/// Refuse flags given with `--resume` that the run's own options would
/// override; only the output switch and the peer's environment may differ.
fn check_resume_flags(dir: &std::path::Path, given: &GridArgs) -> Result<()> {
    let dir_arg = dir.as_os_str().to_owned();
    let bare = Cli::try_parse_from([
        std::ffi::OsString::from("gvr-bench"),
        "grid".into(),
        "--resume".into(),
        dir_arg,
    ]);
    let Ok(Cli {
        command: Command::Grid(mut bare),
        ..
    }) = bare
    else {
        return Ok(());
    };
    bare.no_report = given.no_report;
    bare.python = given.python.clone();
    bare.peer_script = given.peer_script.clone();
    bare.peer_backend = given.peer_backend.clone();
    if format!("{bare:?}") != format!("{given:?}") {
        return Err(GvrError::Usage(
            "--resume takes the run's own selection and options (captures, grid, arms, --batches and the other selection, protocol and device flags); drop them (only --no-report and the peer's --python/--peer-script/--peer-backend may be given)".into(),
        ));
    }
    Ok(())
}

fn resume_args(dir: PathBuf, given: &GridArgs) -> Result<GridArgs> {
    check_resume_dir(&dir)?;
    check_resume_flags(&dir, given)?;
    let manifest = EnvManifest::read(&dir)?;
    let original = Cli::try_parse_from(&manifest.command_line).map_err(|e| {
        GvrError::input(
            &dir,
            "manifest.json: command_line",
            one_line(&e.to_string()),
        )
    })?;
    let Command::Grid(mut args) = original.command else {
        return Err(GvrError::input(
            &dir,
            "manifest.json: command_line",
            "not a `grid` run",
        ));
    };
    args.out = None;
    args.resume = Some(dir);
    // Output-only switches may differ from the original run.
    args.no_report = given.no_report;
    Ok(args)
}

fn cmd_grid(args: GridArgs) -> Result<i32> {
    let args = match args.resume.clone() {
        Some(dir) => resume_args(dir, &args)?,
        None => args,
    };
    let arms = parse_arms(args.arms.as_deref())?;
    let run_dir = match (&args.resume, &args.out) {
        (Some(dir), _) => dir.clone(),
        (None, Some(out)) => out.clone(),
        (None, None) => PathBuf::from("runs").join(utc_now_compact()),
    };
    if args.cold_reps == 0 {
        return Err(GvrError::Usage(
            "--cold-reps must be at least 1 (the published statistic is their mean)".into(),
        ));
    }
    if let Some(list) = &args.devices {
        return cmd_grid_devices(&args, &devices::parse_devices(list)?, &run_dir);
    }
    let timing = TimingChoice::resolve(args.timing)?;
    let mut peers = peer_configs(&args, &run_dir, args.device, timing);
    for cfg in &peers {
        // Before the grid: a missing library must not cost a campaign.
        cfg.preflight()?;
    }
    let cfg = GridConfig {
        captures: args.cases.captures.clone(),
        grid: args.cases.grid.clone(),
        selection: args.cases.selection.clone(),
        arms,
        run_dir: run_dir.clone(),
        resume: args.resume.is_some(),
        protocol: protocol_of(&args),
        device: args.device,
        cpu_only: args.cpu,
        aa: args.aa.clone(),
        bandwidth: args.bandwidth,
        floor: args.floor,
        tunings: args.cases.tune.tunings()?,
        timing,
    };
    let outcome = run::run_grid(&cfg)?;
    eprintln!(
        "{} records written to {} ({} pairs already done, {} inexact)",
        outcome.records_written,
        run_dir.join(crate::record::RESULTS_FILE).display(),
        outcome.pairs_skipped,
        outcome.inexact
    );
    print_inexact(&run_dir);
    if outcome.interrupted {
        return Ok(run::signals::exit_code(outcome.stop_signal));
    }
    // A peer failure keeps what it joined; the report still shows it, and
    // the other peers still run.
    let mut peer_result = Ok(());
    for cfg in &mut peers {
        // The peers use the method our arms were timed with.
        if let Some(method) = outcome.gpu_method {
            cfg.method = method;
        }
        match peer::run_peer(cfg) {
            Ok(p) => eprintln!(
                "peer {}: {} records joined ({} inexact)",
                cfg.peer.name(),
                p.records_joined,
                p.inexact
            ),
            Err(e) => {
                eprintln!("peer {}: {e}", cfg.peer.name());
                if peer_result.is_ok() {
                    peer_result = Err(e);
                }
            }
        }
    }
    if !args.no_report {
        // The report reads the bandwidth the run measured from its manifest.
        print_report(&run_dir, None, args.aa.as_deref())?;
    }
    peer_result.map(|()| 0)
}

/// Name the run's inexact cases (this start's and earlier ones'), capped.
fn print_inexact(run_dir: &std::path::Path) {
    let Ok(records) = crate::record::read_records(&run_dir.join(crate::record::RESULTS_FILE))
    else {
        return;
    };
    let inexact = crate::record::inexact_cases(&records);
    if inexact.is_empty() {
        return;
    }
    eprintln!("inexact cases ({}):", inexact.len());
    for line in crate::record::inexact_lines(&inexact) {
        eprintln!("  {line}");
    }
}

/// One config per `--peer` (repeats dropped), timed as `timing` says until
/// the grid reports the method its GPU timer actually used.
fn peer_configs(
    args: &GridArgs,
    run_dir: &std::path::Path,
    device: usize,
    timing: TimingChoice,
) -> Vec<PeerConfig> {
    peer::dedup_peers(&args.peer)
        .into_iter()
        .map(|p| {
            let mut cfg = PeerConfig::new(
                p,
                &args.cases.captures,
                run_dir,
                device,
                protocol_of(args),
                args.cases.selection.rows,
                timing.nominal_method(),
            );
            cfg.python = args.python.clone();
            if let Some(script) = &args.peer_script {
                cfg.script = script.clone();
            }
            cfg.backend = args.peer_backend.clone();
            cfg
        })
        .collect()
}

fn protocol_of(args: &GridArgs) -> Protocol {
    Protocol {
        warmup: args.warmup,
        warm_reps: args.warm_reps,
        cold_reps: args.cold_reps,
        flush_bytes: args.flush_mib << 20,
    }
}

fn print_report(run_dir: &std::path::Path, bandwidth: Option<f64>, aa: Option<&str>) -> Result<()> {
    println!("{}", crate::report::report_run(run_dir, bandwidth)?);
    if let Some(arm) = aa {
        println!(
            "## A/A noise floor ({arm} vs {arm}#2)\n\n{}",
            crate::report::aa_in_run(run_dir, arm)?
        );
    }
    Ok(())
}

/// `grid --devices LIST`: one child `gvr-bench grid --shard i/n --device d`
/// per device (see `run::devices` for why processes), then merge and report.
fn cmd_grid_devices(
    args: &GridArgs,
    device_list: &[usize],
    run_dir: &std::path::Path,
) -> Result<i32> {
    if args.cases.selection.shard.is_some() {
        return Err(GvrError::Usage(
            "--devices shards the selection itself; drop --shard (or use --shard with --device on each host)".into(),
        ));
    }
    if args.cases.selection.limit.is_some() {
        return Err(GvrError::Usage(
            "--limit applies per shard, so with --devices the run would not be the limited selection; use --sample or --cells instead".into(),
        ));
    }
    let timing = TimingChoice::resolve(args.timing)?;
    for cfg in peer_configs(args, run_dir, device_list[0], timing) {
        cfg.preflight()?;
    }
    let resume = args.resume.is_some();
    let mut manifest = EnvManifest::collect(
        &args.cases.captures,
        args.cases.grid.as_deref(),
        protocol_of(args),
        args.cases.selection.rows,
    );
    manifest
        .notes
        .insert("devices".into(), serde_json::json!(device_list));
    devices::prepare_run_dir(run_dir, resume, &manifest)?;
    let count = device_list.len();
    let workers: Vec<WorkerSpec> = device_list
        .iter()
        .enumerate()
        .map(|(index, &device)| {
            let dir = devices::shard_dir(run_dir, index);
            let args = if dir.join(crate::env_manifest::MANIFEST_FILE).exists() {
                vec![
                    "grid".to_string(),
                    "--resume".to_string(),
                    dir.display().to_string(),
                    "--no-report".to_string(),
                ]
            } else {
                worker_args(args, &format!("{index}/{count}"), device, &dir)
            };
            WorkerSpec {
                index,
                device,
                args,
            }
        })
        .collect();
    let exe = std::env::current_exe().map_err(|e| GvrError::Other(e.into()))?;
    match devices::run_workers(&exe, run_dir, &workers)? {
        FanOutOutcome::Interrupted => Ok(match run::signals::requested() {
            Some(sig) => run::signals::exit_code(sig),
            None => 130,
        }),
        FanOutOutcome::Merged { records, cases } => {
            eprintln!(
                "merged {count} shards: {records} records over {cases} cases into {}",
                run_dir.join(crate::record::RESULTS_FILE).display()
            );
            if !args.no_report {
                print_report(run_dir, None, args.aa.as_deref())?;
            }
            Ok(0)
        }
    }
}

/// The `grid` command line of one `--devices` worker: the parent's options
/// with this worker's shard, device and output, and no report.
pub fn worker_args(
    args: &GridArgs,
    shard: &str,
    device: usize,
    out: &std::path::Path,
) -> Vec<String> {
    let mut v: Vec<String> = vec!["grid".into()];
    let mut opt = |name: &str, value: String| {
        v.push(format!("--{name}"));
        v.push(value);
    };
    opt("captures", args.cases.captures.display().to_string());
    if let Some(grid) = &args.cases.grid {
        opt("grid", grid.display().to_string());
    }
    let sel = &args.cases.selection;
    if !sel.segments.is_empty() {
        opt("segment", sel.segments.join(","));
    }
    if let Some(n) = sel.n_min {
        opt("n-min", n.to_string());
    }
    if let Some(n) = sel.n_max {
        opt("n-max", n.to_string());
    }
    if let Some(b) = &sel.batches {
        opt("batches", b.clone());
    }
    for glob in &sel.cell_globs {
        opt("cells", glob.clone());
    }
    if let Some(s) = sel.sample {
        opt("sample", s.to_string());
    }
    opt(
        "rows",
        match sel.rows {
            crate::grid::RowsMode::Replicate => "replicate".into(),
            crate::grid::RowsMode::Independent => "independent".into(),
        },
    );
    opt("shard", shard.to_string());
    if let Some(arms) = &args.arms {
        opt("arms", arms.clone());
    }
    opt("out", out.display().to_string());
    opt("warmup", args.warmup.to_string());
    opt("warm-reps", args.warm_reps.to_string());
    opt("cold-reps", args.cold_reps.to_string());
    opt("flush-mib", args.flush_mib.to_string());
    opt("device", device.to_string());
    if let Some(aa) = &args.aa {
        opt("aa", aa.clone());
    }
    if !args.peer.is_empty() {
        let names: Vec<&str> = args.peer.iter().map(|p| p.name()).collect();
        opt("peer", names.join(","));
        opt("python", args.python.display().to_string());
        if let Some(script) = &args.peer_script {
            opt("peer-script", script.display().to_string());
        }
        opt("peer-backend", args.peer_backend.clone());
    }
    if let Some(tune) = &args.cases.tune.tune {
        opt("tune", tune.display().to_string());
    }
    for knob in &args.cases.tune.knobs {
        opt("knob", knob.clone());
    }
    if let Some(timing) = args.timing {
        opt("timing", timing_name(timing).into());
    }
    if args.cpu {
        v.push("--cpu".into());
    }
    if args.bandwidth {
        v.push("--bandwidth".into());
    }
    if args.floor {
        v.push("--floor".into());
    }
    v.push("--no-report".into());
    v
}

/// `--timing` spelling of a choice.
fn timing_name(choice: TimingChoice) -> &'static str {
    match choice {
        TimingChoice::Auto => "auto",
        TimingChoice::Cupti => "cupti",
        TimingChoice::Graph => "graph",
        TimingChoice::Events => "events",
    }
}

fn cmd_certify(args: CertifyArgs) -> Result<i32> {
    let cfg = CertifyConfig {
        tunings: args.cases.tune.tunings()?,
        captures: args.cases.captures,
        grid: args.cases.grid,
        selection: args.cases.selection,
        arms: parse_arms(args.arms.as_deref())?,
        adversarial: !args.no_adversarial,
        soak_rounds: args.soak,
        soak_seed: args.soak_seed,
        poison_pad: args.poison_pad,
        device: args.device,
        cpu_only: args.cpu,
    };
    let outcome = run::certify(&cfg)?;
    print!("{}", outcome.table());
    Ok(if outcome.any_inexact() { 1 } else { 0 })
}

fn cmd_phases(args: PhasesArgs) -> Result<i32> {
    let cfg = run::PhasesConfig {
        tunings: args.cases.tune.tunings()?,
        captures: args.cases.captures,
        grid: args.cases.grid,
        selection: args.cases.selection,
        arms: registry::parse_arm_list(&args.arms)?,
        reps: args.reps,
        cold_reps: args.cold_reps,
        flush_bytes: args.flush_mib << 20,
        device: args.device,
        out: args.out,
    };
    let outcome = run::phases(&cfg)?;
    print!("{}", run::phases::table(&outcome.records));
    if let Some(e) = outcome.stopped {
        return Err(e); // the records before it are printed and kept under --out
    }
    Ok(if run::phases::any_failed(&outcome.records) {
        1
    } else {
        0
    })
}

fn cmd_capture(action: CaptureCommand) -> Result<i32> {
    match action {
        CaptureCommand::Synth(opts) => {
            println!("{}", crate::synth::synth(&opts)?);
            Ok(0)
        }
        CaptureCommand::Inspect { path } => {
            println!("{}", crate::capture::inspect::inspect(&path)?);
            Ok(0)
        }
        CaptureCommand::Validate { path } => {
            let report = crate::synth::validate::validate(&path)?;
            println!("{report}");
            Ok(if report.passed() { 0 } else { 1 })
        }
    }
}

/// `gvr-bench arms` output.
pub fn arms_table() -> String {
    let mut out = String::from("| arm | backend | admits | description |\n|---|---|---|---|\n");
    for a in registry::known_arms() {
        let backend = match a.backend {
            Backend::Cpu => "cpu",
            Backend::Gpu => "gpu",
        };
        out.push_str(&format!(
            "| {} | {backend} | {} | {} |\n",
            a.name, a.admits, a.description
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn gpu_error_hint_suggests_cpu_only_where_the_command_takes_it() {
        let e = GvrError::Gpu("no CUDA device".into());
        let parse = |args: &[&str]| Cli::try_parse_from(args).expect("parses").command;
        let info = parse(&["gvr-bench", "gpu", "info"]);
        assert!(!takes_cpu_flag(&info));
        let hint = hint_for(&e, takes_cpu_flag(&info)).expect("a hint");
        assert!(!hint.contains("--cpu"), "{hint}");
        let grid = parse(&["gvr-bench", "grid", "--captures", "c", "--out", "o"]);
        assert!(takes_cpu_flag(&grid));
        let hint = hint_for(&e, takes_cpu_flag(&grid)).expect("a hint");
        assert!(hint.contains("--cpu"), "{hint}");
    }

    #[test]
    fn grid_defaults_match_the_protocol() {
        let cli = Cli::try_parse_from(["gvr-bench", "grid"]).unwrap();
        let Command::Grid(args) = cli.command else {
            panic!("not grid")
        };
        let p = Protocol::default();
        assert_eq!(
            (args.warmup, args.warm_reps, args.cold_reps),
            (p.warmup, p.warm_reps, p.cold_reps)
        );
        assert_eq!(args.flush_mib << 20, p.flush_bytes);
        assert_eq!(args.cases.captures, PathBuf::from("captures/sample"));
    }

    #[test]
    fn worker_args_reproduce_the_parent_options() {
        let parent = [
            "gvr-bench",
            "grid",
            "--captures",
            "caps",
            "--grid",
            "g.csv",
            "--segment",
            "flash,pro",
            "--n-min",
            "1000",
            "--n-max",
            "9000",
            "--batches",
            "1,4",
            "--cells",
            "v4_*",
            "--cells",
            "x*",
            "--sample",
            "50",
            "--rows",
            "independent",
            "--arms",
            "ss,radix",
            "--warmup",
            "3",
            "--warm-reps",
            "2",
            "--cold-reps",
            "4",
            "--flush-mib",
            "64",
            "--aa",
            "radix",
            "--peer",
            "torch,flashinfer",
            "--python",
            "/opt/py/bin/python3",
            "--peer-script",
            "p.py",
            "--peer-backend",
            "numpy",
            "--knob",
            "main.aim8=12",
            "--knob",
            "reg.emit=cur",
            "--tune",
            "t.toml",
            "--timing",
            "graph",
            "--cpu",
            "--bandwidth",
            "--floor",
            "--devices",
            "0,1",
            "--out",
            "run",
        ];
        let Command::Grid(parent) = Cli::try_parse_from(parent).unwrap().command else {
            panic!("not grid")
        };
        let child = worker_args(&parent, "1/2", 1, std::path::Path::new("run/shards/1"));
        let child_cli = std::iter::once("gvr-bench".to_string()).chain(child);
        let Command::Grid(child) = Cli::try_parse_from(child_cli).unwrap().command else {
            panic!("not grid")
        };
        assert_eq!(child.cases.selection.shard.as_deref(), Some("1/2"));
        assert_eq!(child.device, 1);
        assert!(child.devices.is_none() && child.no_report);
        assert_eq!(child.out, Some(PathBuf::from("run/shards/1")));
        // Everything else is the parent's.
        let mut expected = parent.clone();
        expected.cases.selection.shard = Some("1/2".into());
        expected.device = 1;
        expected.devices = None;
        expected.no_report = true;
        expected.out = child.out.clone();
        assert_eq!(format!("{expected:?}"), format!("{child:?}"));
    }

    #[test]
    fn out_and_resume_conflict() {
        assert!(Cli::try_parse_from(["gvr-bench", "grid", "--out", "a", "--resume", "b"]).is_err());
    }

    #[test]
    fn parse_errors_become_two_lines() {
        let err = Cli::try_parse_from(["gvr-bench", "grid", "--arm", "x"]).unwrap_err();
        let (error, hint) = compact_parse_error(&err.render().to_string());
        assert!(
            error.starts_with("error: ") && error.contains("--arm"),
            "{error}"
        );
        assert!(hint.contains("--arms"), "{hint}");
        let err = Cli::try_parse_from(["gvr-bench", "grid", "--cold-reps", "x"]).unwrap_err();
        let (error, hint) = compact_parse_error(&err.render().to_string());
        assert!(error.contains("--cold-reps"), "{error}");
        assert!(!hint.is_empty());
    }

    #[test]
    fn messages_become_one_line() {
        assert_eq!(one_line("a\n  b\tc "), "a b c");
    }

    #[test]
    fn arms_table_lists_every_arm() {
        let table = arms_table();
        for a in registry::known_arms() {
            assert!(table.contains(&format!("| {} |", a.name)));
        }
    }
}
