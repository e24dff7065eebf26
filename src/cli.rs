//! Command-line definitions and one function per subcommand.
//!
//! Exit codes: 0 success; 1 the check ran and found a problem (inexact arm,
//! failed validation, regression); 2 bad input; 3 environment or internal
//! failure; 130 interrupted (resumable).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::arms::{registry, Backend};
use crate::env_manifest::{utc_now_compact, EnvManifest};
use crate::error::{GvrError, Result};
use crate::run::deps::{self, AaOptions, RegressOptions, ReportOptions, Selection, SynthOptions};
use crate::run::{self, CertifyConfig, GridConfig};
use crate::timing::Protocol;

#[derive(Debug, Parser)]
#[command(
    name = "gvr-bench",
    version,
    about = "Benchmark and certify exact top-K decode kernels"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Time every selected case on every arm and check each output.
    Grid(GridArgs),
    /// Exactness only (no timing): selected cases plus the adversarial suite.
    Certify(CertifyArgs),
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
    /// Merge shard runs into one run directory.
    Merge(MergeArgs),
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

#[derive(Debug, Clone, Args)]
pub struct GridArgs {
    /// Capture set directory.
    #[arg(long, default_value = "captures/sample")]
    pub captures: PathBuf,
    /// Grid file (CSV of cells); default: every cell of the capture set.
    #[arg(long)]
    pub grid: Option<PathBuf>,
    #[command(flatten)]
    pub selection: Selection,
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
    /// Do not print the report at the end.
    #[arg(long)]
    pub no_report: bool,
}

#[derive(Debug, Clone, Args)]
pub struct CertifyArgs {
    #[arg(long, default_value = "captures/sample")]
    pub captures: PathBuf,
    /// Grid file (CSV of cells); default: every cell of the capture set.
    #[arg(long)]
    pub grid: Option<PathBuf>,
    #[command(flatten)]
    pub selection: Selection,
    /// Comma-separated arms; default as for `grid`.
    #[arg(long)]
    pub arms: Option<String>,
    /// Skip the adversarial suite.
    #[arg(long)]
    pub no_adversarial: bool,
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
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", one_line(&e.to_string()));
            if let Some(hint) = hint_for(&e) {
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
        .try_init();
}

fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn hint_for(e: &GvrError) -> Option<String> {
    match e {
        GvrError::Gpu(_) => Some("pass --cpu to run the CPU engines".into()),
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
    match cli.command {
        Command::Grid(args) => cmd_grid(args),
        Command::Certify(args) => cmd_certify(args),
        Command::Capture { action } => cmd_capture(action),
        Command::Report(opts) => {
            println!("{}", deps::report(&opts)?);
            Ok(0)
        }
        Command::Aa(opts) => {
            println!("{}", deps::aa(&opts)?);
            Ok(0)
        }
        Command::Regress(opts) => {
            let (regressed, markdown) = deps::regress(&opts)?;
            println!("{markdown}");
            Ok(if regressed { 1 } else { 0 })
        }
        Command::Arms => {
            print!("{}", arms_table());
            Ok(0)
        }
        Command::Gpu {
            action: GpuCommand::Info { device },
        } => {
            println!("{}", crate::gpu::gpu_selfcheck_on(device)?);
            Ok(0)
        }
        Command::Merge(args) => {
            let outcome = run::merge(&args.runs, &args.out)?;
            println!(
                "merged {} runs: {} records over {} cases into {}",
                args.runs.len(),
                outcome.records,
                outcome.cases,
                args.out.display()
            );
            Ok(0)
        }
    }
}

fn parse_arms(list: Option<&str>) -> Result<Option<Vec<String>>> {
    list.map(registry::parse_arm_list).transpose()
}

/// `--resume DIR` reuses the options of the run being resumed: they are
/// re-parsed from the command line stored in its manifest.
fn resume_args(dir: PathBuf, given: &GridArgs) -> Result<GridArgs> {
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
    let cfg = GridConfig {
        captures: args.captures.clone(),
        grid: args.grid.clone(),
        selection: args.selection.clone(),
        arms,
        run_dir: run_dir.clone(),
        resume: args.resume.is_some(),
        protocol: Protocol {
            warmup: args.warmup,
            warm_reps: args.warm_reps,
            cold_reps: args.cold_reps,
            flush_bytes: args.flush_mib << 20,
        },
        device: args.device,
        cpu_only: args.cpu,
        aa: args.aa.clone(),
        bandwidth: args.bandwidth,
    };
    let outcome = run::run_grid(&cfg)?;
    eprintln!(
        "{} records written to {} ({} pairs already done, {} inexact)",
        outcome.records_written,
        run_dir.join(run::RESULTS_FILE).display(),
        outcome.pairs_skipped,
        outcome.inexact
    );
    if outcome.interrupted {
        return Ok(130);
    }
    if !args.no_report {
        println!(
            "{}",
            deps::report_run(&run_dir, outcome.bandwidth_bytes_per_s)?
        );
        if let Some(arm) = &args.aa {
            println!(
                "## A/A noise floor ({arm} vs {arm}#2)\n\n{}",
                deps::aa_run(&run_dir, arm)?
            );
        }
    }
    Ok(0)
}

fn cmd_certify(args: CertifyArgs) -> Result<i32> {
    let cfg = CertifyConfig {
        captures: args.captures,
        grid: args.grid,
        selection: args.selection,
        arms: parse_arms(args.arms.as_deref())?,
        adversarial: !args.no_adversarial,
        poison_pad: args.poison_pad,
        device: args.device,
        cpu_only: args.cpu,
    };
    let outcome = run::certify(&cfg)?;
    print!("{}", outcome.table());
    Ok(if outcome.any_inexact() { 1 } else { 0 })
}

fn cmd_capture(action: CaptureCommand) -> Result<i32> {
    match action {
        CaptureCommand::Synth(opts) => {
            println!("{}", deps::synth(&opts)?);
            Ok(0)
        }
        CaptureCommand::Inspect { path } => {
            println!("{}", deps::inspect(&path)?);
            Ok(0)
        }
        CaptureCommand::Validate { path } => {
            let (passed, text) = deps::validate(&path)?;
            println!("{text}");
            Ok(if passed { 0 } else { 1 })
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
        assert_eq!(args.captures, PathBuf::from("captures/sample"));
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
