//! Shared by tests/gpu/ss_main.rs and tests/emu/ss_main.rs: batch
//! builders and the constructed rows that drive each path of the main
//! family, checked against the CPU model with the launch's own parameters.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use gvr_bench::arms::{registry, Shape};
use gvr_bench::capture::format::npad_for;
use gvr_bench::exact::{check_batch, check_row};
use gvr_bench::gpu::Gpu;
use gvr_bench::grid::Batch;
use gvr_bench::topk::cpu::{select_row, PathCounts};
use gvr_bench::topk::families::main;
use gvr_bench::topk::route::{DeviceProfile, MainParams};
use gvr_bench::topk::Tuning;

pub const PAD: f32 = 3e38;

/// A batch of `rows` (each its own length), +3e38 padding, given hints
/// (one list per row, padded with -1 to k).
pub fn batch(rows: &[Vec<f32>], hints: &[Vec<i32>], k: usize) -> Batch {
    let npad = npad_for(rows.iter().map(Vec::len).max().unwrap_or(0));
    let mut logits = vec![PAD; rows.len() * npad];
    let mut all_hints = vec![-1; rows.len() * k];
    for (r, row) in rows.iter().enumerate() {
        logits[r * npad..r * npad + row.len()].copy_from_slice(row);
        if let Some(h) = hints.get(r) {
            for (slot, &i) in h.iter().take(k).enumerate() {
                all_hints[r * k + slot] = i;
            }
        }
    }
    Batch {
        rows: rows.len(),
        npad,
        k,
        logits,
        n: rows.iter().map(|r| r.len() as u32).collect(),
        hints: all_hints,
        varlen: None,
    }
}

/// `copies` identical rows (so the plan's batch size, hence BLK / R, is chosen).
pub fn replicated(row: &[f32], hints: &[i32], copies: usize, k: usize) -> Batch {
    batch(
        &vec![row.to_vec(); copies],
        &vec![hints.to_vec(); copies],
        k,
    )
}

/// The launch parameters `ss-main` launches for this batch.
pub fn planned(b: &Batch) -> MainParams {
    main::plan(
        &Shape::of(b),
        &DeviceProfile::h200(),
        None,
        &Tuning::default(),
    )
    .expect("ss-main plans the batch")
    .params
}

/// The CPU model of the kernel on row `r` with the launch's parameters:
/// exact, and returns the path counts.
pub fn model_row(b: &Batch, r: usize) -> PathCounts {
    let params = planned(b);
    let mut counts = PathCounts::default();
    let out = select_row(b.row(r), b.hints(r), b.k, &params, &mut counts);
    if let Err(reason) = check_row(b.row(r), b.k, &out) {
        panic!("model inexact on row {r}: {reason}; {counts:?}");
    }
    assert_eq!(counts.narrow_level_cap, 0, "{counts:?}");
    counts
}

/// Positions the sample of the planned launch reads in a row of length n.
pub fn sample_positions(p: &MainParams) -> Vec<usize> {
    assert!(p.sampled, "construction needs a sampled row: {p:?}");
    (0..p.smp)
        .flat_map(|j| {
            let start = j * p.ss2 * p.unit_values;
            start..start + p.unit_values
        })
        .collect()
}

/// Distinct values in [0, 1) spread over the row (a permutation of i/n).
pub fn spread(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919) % n) as f32 / n as f32).collect()
}

/// A constructed batch, the path it must take (checked on the model), and
/// its label.
pub struct PathCase {
    pub label: &'static str,
    pub batch: Batch,
    pub expect: fn(&PathCounts) -> bool,
}

pub fn path_cases() -> Vec<PathCase> {
    let k = 512;
    let mut cases = Vec::new();
    // 40 rows: one CTA per row, BLK 1024 (b > 32, b·R ≤ SMs).
    let rows40 = 40;
    let n = 40_000;
    let probe = replicated(&spread(n), &[], rows40, k);
    let p = planned(&probe);
    assert!(!p.split && p.blk == 1024, "{p:?}");
    let sample = sample_positions(&p);
    let in_sample: HashSet<usize> = sample.iter().copied().collect();

    cases.push(PathCase {
        label: "sample rung, rank refine",
        // 30,000 values: on the H200 schedule a 40,000-value spread row
        // needs its whole crossing bin (no refine).
        batch: replicated(&spread(30_000), &[], rows40, k),
        expect: |c| c.sample_rung == 1 && c.rank_refine == 1 && c.retries == 0,
    });

    {
        // Sample sees TGT tens and TGT fives; the row has 2k more fives.
        let mut row = spread(n);
        for (rank, &i) in sample.iter().enumerate() {
            if rank < p.tgt {
                row[i] = 10.0;
            } else if rank < 2 * p.tgt {
                row[i] = 5.0;
            }
        }
        for i in (0..n).filter(|i| !in_sample.contains(i)).take(2 * k) {
            row[i] = 5.0;
        }
        cases.push(PathCase {
            label: "TSH floor after an overshooting rung",
            batch: replicated(&row, &[], rows40, k),
            expect: |c| c.tsh_floor == 1 && c.retries == 1,
        });
    }
    {
        let mut row = spread(n);
        for &i in sample.iter().take(3 * p.tgt) {
            row[i] = 10.0;
        }
        let floor_index = (0..n)
            .filter(|&i| row[i] < 10.0)
            .min_by(|&a, &b| (row[a] - 0.9).abs().total_cmp(&(row[b] - 0.9).abs()))
            .expect("small values");
        cases.push(PathCase {
            label: "hint floor after an overshooting rung",
            batch: replicated(&row, &[floor_index as i32, sample[0] as i32], rows40, k),
            expect: |c| c.hint_floor == 1 && c.retries >= 1,
        });
    }
    {
        let mut row = vec![-3.2e38f32; n];
        for (placed, i) in (0..n)
            .filter(|i| !in_sample.contains(i))
            .take(k - 1)
            .enumerate()
        {
            row[i] = 1.0 + placed as f32;
        }
        cases.push(PathCase {
            label: "whole-row fallback (ladder exhausted)",
            batch: replicated(&row, &[], rows40, k),
            expect: |c| c.degenerate_sample == 1 && c.whole_row_fallback == 1,
        });
    }
    cases.push(PathCase {
        label: "degen A (unsampled, collapsed window)",
        batch: replicated(&spread(5000), &[], rows40, k),
        expect: |c| c.unsampled == 1 && c.degen_a == 1,
    });
    {
        let mut row = spread(n);
        for &i in &sample {
            row[i] = 0.5;
        }
        cases.push(PathCase {
            label: "degen B (degenerate sample, staging overflow)",
            batch: replicated(&row, &[], rows40, k),
            expect: |c| c.degenerate_sample == 1 && c.degen_b_overflow == 1,
        });
        let lowest = (0..n).min_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap();
        let highest = (0..n).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap();
        let hints = [lowest, highest, highest, lowest].map(|i| i as i32);
        cases.push(PathCase {
            label: "staging overflow re-sweep",
            batch: replicated(&row, &hints, rows40, k),
            expect: |c| c.hint_floor == 1 && c.staging_resweep == 1 && c.rank_refine == 1,
        });
    }
    {
        let small = 5000;
        let mut row = spread(small);
        for i in 0..k {
            row[i * 9] = 100.0;
        }
        let lowest = (0..small)
            .min_by(|&a, &b| row[a].total_cmp(&row[b]))
            .unwrap();
        cases.push(PathCase {
            label: "whole crossing bin",
            batch: replicated(&row, &[lowest as i32, 0], rows40, k),
            expect: |c| c.hint_floor == 1 && c.whole_bin == 1,
        });
    }
    {
        let mut row = spread(n);
        for &i in sample.iter().take(10) {
            row[i] = f32::INFINITY;
        }
        for &i in sample.iter().skip(10).take(10) {
            row[i] = f32::NEG_INFINITY;
        }
        row[1] = f32::INFINITY;
        cases.push(PathCase {
            label: "±inf in the sample",
            batch: replicated(&row, &[sample[0] as i32, sample[15] as i32], rows40, k),
            expect: |c| c.rows == 1,
        });
    }

    // SPLIT: one row of 256K, R = 64, sample rung.
    cases.push(PathCase {
        label: "SPLIT sample rung",
        batch: replicated(&spread(262_144), &[], 1, 1024),
        expect: |c| c.split_rows == 1 && c.sample_rung == 1,
    });
    // SPLIT with TSH staging: 16 rows of 128K, k = 512 → R = 8, tshg.
    {
        let b = replicated(&spread(131_072), &[], 16, 512);
        assert!(planned(&b).tshg, "{:?}", planned(&b));
        cases.push(PathCase {
            label: "SPLIT TSH staging",
            batch: b,
            expect: |c| c.split_rows == 1 && c.tsh_floor == 1,
        });
    }
    // SPLIT part overflow: 16 rows of 128K, k = 2048 → R = 8 (no tshg);
    // part 0 owns 16,384 elements, 9,000 of them survive the hint floor
    // (> SCAP 8192, ≤ GCAP): re-swept into the slab, read back from global.
    {
        let n = 131_072;
        let probe = replicated(&spread(n), &[], 16, 2048);
        let p = planned(&probe);
        assert!(p.split && p.r == 8 && p.scap == 8192, "{p:?}");
        let mut row = spread(n);
        for (rank, x) in row.iter_mut().skip(1000).take(9000).enumerate() {
            *x = 1.0 + rank as f32 / 9000.0;
        }
        for i in sample_positions(&p) {
            row[i] = 0.5;
        }
        cases.push(PathCase {
            label: "SPLIT part staging overflow into the slab",
            batch: replicated(&row, &[1000, 9999], 16, 2048),
            expect: |c| c.split_part_resweep == 1 && c.hint_floor == 1,
        });
    }
    // SPLIT slab overflow: degenerate sample, no hints, every value survives.
    {
        let n = 100_000;
        let probe = replicated(&spread(n), &[], 1, 512);
        let p = planned(&probe);
        assert!(p.split, "{p:?}");
        let mut row = spread(n);
        for i in sample_positions(&p) {
            row[i] = 0.5;
        }
        cases.push(PathCase {
            label: "SPLIT slab overflow → whole-row fallback",
            batch: replicated(&row, &[], 1, 512),
            expect: |c| c.split_slab_overflow == 1 && c.whole_row_fallback == 1,
        });
    }
    cases
}

/// Run a built emulator on `b` and return its raw output file: the input is
/// `words` (the driver's header) followed by the logits, per-row n and hints,
/// all little-endian 4-byte words. Panics (the test fails) if the emulator
/// aborts, naming `label`.
pub fn emulator_output(exe: &Path, label: &str, words: &[u32], b: &Batch) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(4 * (words.len() + b.logits.len() + b.rows + b.hints.len()));
    for w in words {
        bytes.extend_from_slice(&w.to_le_bytes());
    }
    for x in &b.logits {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    for &n in &b.n {
        bytes.extend_from_slice(&(n as i32).to_le_bytes());
    }
    for h in &b.hints {
        bytes.extend_from_slice(&h.to_le_bytes());
    }
    let dir = exe.parent().expect("emulator dir");
    let mut hasher = DefaultHasher::new();
    label.hash(&mut hasher);
    // Tests of one process run in parallel and may reuse a label on the same
    // emulator: a per-call number keeps their files apart.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tag = format!("{}-{:016x}-{call}", std::process::id(), hasher.finish());
    let input = dir.join(format!("in-{tag}.bin"));
    let output = dir.join(format!("out-{tag}.bin"));
    std::fs::write(&input, &bytes).expect("write input");
    let result = Command::new(exe)
        .arg(&input)
        .arg(&output)
        .output()
        .expect("run emulator");
    let _ = std::fs::remove_file(&input);
    assert!(
        result.status.success(),
        "{label}: emulator failed ({}): {}",
        result.status,
        String::from_utf8_lossy(&result.stderr)
    );
    let raw = std::fs::read(&output).expect("emulator output");
    let _ = std::fs::remove_file(&output);
    raw
}

/// Run a built kernel emulator (tests/ss_emu/*_main.cpp) on `b` and return
/// (output indices `[rows·k]`, one trace word per row). The input file is
/// `words` (the driver's header and launch parameters) followed by the
/// logits, per-row n and hints, all little-endian 4-byte words. Panics (the
/// test fails) if the emulator aborts, naming `label`.
pub fn run_emulator(exe: &Path, label: &str, words: &[u32], b: &Batch) -> (Vec<i32>, Vec<i32>) {
    let raw = emulator_output(exe, label, words, b);
    let words = b.rows * b.k + b.rows;
    let stamp_bytes = gvr_bench::gpu::probe::PROBE_CTAS * gvr_bench::gpu::probe::PROBE_SLOTS * 8;
    assert!(
        raw.len() == words * 4 || raw.len() == words * 4 + stamp_bytes,
        "{label}: {} bytes of emulator output, want {} (+ {stamp_bytes} from a probe build)",
        raw.len(),
        words * 4
    );
    let (slots, stamps) = raw.split_at(words * 4);
    let mut out: Vec<i32> = slots
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let trace = out.split_off(b.rows * b.k);
    let stamps: Vec<u64> = stamps
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    LAST_STAMPS.with(|cell| *cell.borrow_mut() = stamps);
    (out, trace)
}

thread_local! {
    static LAST_STAMPS: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The phase-stamp array (`gvr_bench::gpu::probe` layout) of the last
/// [`run_emulator`] call on this thread: filled by emulators built with
/// `-DSS_PHASE_PROBE=1`, empty otherwise. A side channel, so the families'
/// check helpers keep their signatures.
#[allow(dead_code)]
fn take_stamps() -> Vec<u64> {
    LAST_STAMPS.with(|cell| std::mem::take(&mut *cell.borrow_mut()))
}

/// One probed CTA of an emulator run: the phases it passed, in order, and
/// its pass count.
#[allow(dead_code)]
#[derive(Debug)]
pub struct ProbedCta {
    pub cta: usize,
    pub marks: Vec<&'static str>,
    pub passes: u64,
}

/// The phases of the last probed emulator run (see [`take_stamps`]) and
/// every probed CTA; panics (the test fails) when the run left no stamps or
/// a CTA's marks are out of order.
#[allow(dead_code)]
pub fn last_probed_launch(label: &str) -> (gvr_bench::gpu::probe::LaunchPhases, Vec<ProbedCta>) {
    use gvr_bench::gpu::probe;
    let stamps = take_stamps();
    assert!(
        !stamps.is_empty(),
        "{label}: the emulator wrote no stamp array (built without the probe?)"
    );
    let ctas = probe::parse_stamps(&stamps);
    let summary = probe::summarize(&ctas).unwrap_or_else(|e| panic!("{label}: {e}"));
    let probed = ctas
        .iter()
        .map(|c| ProbedCta {
            cta: c.cta,
            marks: c
                .intervals()
                .expect("checked by summarize")
                .into_iter()
                .map(|(p, _)| p)
                .collect(),
            passes: c.passes,
        })
        .collect();
    (summary, probed)
}

/// Whether g++ can build the host emulators. The tests that need it are
/// ignored at build time where g++ is missing (build.rs sets `no_gxx`), so
/// this only catches g++ vanishing after the build: a failure under CI (which
/// has g++), a SKIPPED line naming `what` elsewhere.
pub fn gxx_available(what: &str) -> bool {
    let ok = Command::new("g++").arg("--version").output().is_ok();
    if !ok {
        if std::env::var_os("CI").is_some() {
            panic!("g++ not found but CI is set: the {what} host emulation cannot be built");
        }
        eprintln!("SKIPPED: g++ not found, the {what} host emulation cannot be built");
    }
    ok
}

/// Build a host emulator from `sources` (file name, text) by compiling the
/// file `main` with g++ and `defines`; cached under cargo's test temp dir in
/// `<prefix>-<hash of sources and defines>`, so each source version builds once.
fn compile_emulator(
    prefix: &str,
    sources: &[(&str, &str)],
    main: &str,
    defines: &[String],
) -> std::path::PathBuf {
    let mut hasher = DefaultHasher::new();
    sources.hash(&mut hasher);
    defines.hash(&mut hasher);
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{prefix}-{:016x}", hasher.finish()));
    let exe = dir.join("emu");
    if exe.is_file() {
        return exe;
    }
    // Tests of one process build in parallel: one thread builds a given
    // emulator while the others with the same sources wait for it (their
    // source writes would truncate files g++ is reading).
    static BUILDING: std::sync::Mutex<
        Vec<(std::path::PathBuf, std::sync::Arc<std::sync::Mutex<()>>)>,
    > = std::sync::Mutex::new(Vec::new());
    let lock = {
        let mut all = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
        match all.iter().find(|(d, _)| *d == dir) {
            Some((_, l)) => l.clone(),
            None => {
                let l = std::sync::Arc::new(std::sync::Mutex::new(()));
                all.push((dir.clone(), l.clone()));
                l
            }
        }
    };
    let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());
    if exe.is_file() {
        return exe;
    }
    std::fs::create_dir_all(&dir).expect("emulator dir");
    for (name, text) in sources {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("a file in the dir")).expect("emulator dir");
        std::fs::write(path, text).expect("write emulator source");
    }
    let building = dir.join(format!("emu.{}.tmp", std::process::id()));
    let status = Command::new("g++")
        .args([
            "-O1",
            "-std=c++17",
            "-U_FORTIFY_SOURCE",
            "-DSS_EMULATION",
            "-w",
        ])
        .arg("-I")
        .arg(&dir)
        .args(defines)
        .arg("-o")
        .arg(&building)
        .arg(dir.join(main))
        .status()
        .expect("run g++");
    assert!(
        status.success(),
        "g++ failed to build the emulator in {}",
        dir.display()
    );
    std::fs::rename(&building, &exe).expect("install emulator");
    exe
}

/// An emulator of one kernel source: the harness headers (the emulator's
/// stand-in for prim/common.cuh, driver.cuh, and cluster.cuh for cluster
/// kernels), the kernels' own ss/common.cuh and ss/knobs.cuh, the kernel
/// `(file name, text)` and its driver `(file name, text)`, built by
/// [`compile_emulator`].
pub fn kernel_emulator(
    prefix: &str,
    cluster: bool,
    kernel: (&str, &str),
    driver: (&str, &str),
    defines: &[String],
) -> std::path::PathBuf {
    let mut sources = vec![
        ("prim/common.cuh", include_str!("../ss_emu/common.cuh")),
        ("driver.cuh", include_str!("../ss_emu/driver.cuh")),
        ("ss/common.cuh", ss_header("ss/common.cuh")),
        ("ss/knobs.cuh", ss_header("ss/knobs.cuh")),
    ];
    if cluster {
        sources.push(("cluster.cuh", include_str!("../ss_emu/cluster.cuh")));
    }
    sources.extend([kernel, driver]);
    compile_emulator(prefix, &sources, driver.0, defines)
}

/// The emulator of a kernel source without clusters whose dynamic shared
/// memory declaration `decl` (the one line g++ cannot take) becomes
/// `replacement`, a pointer the driver sets per CTA; `None` without g++.
pub fn dyn_smem_kernel_emulator(
    prefix: &str,
    kernel: (&str, &str),
    decl: &str,
    replacement: &str,
    driver: (&str, &str),
    defines: &[String],
) -> Option<std::path::PathBuf> {
    let (name, code) = kernel;
    if !gxx_available(name) {
        return None;
    }
    assert!(
        code.contains(decl),
        "{name}: dynamic smem declaration moved"
    );
    let code = code.replace(decl, replacement);
    Some(kernel_emulator(
        prefix,
        false,
        (name, code.as_str()),
        driver,
        defines,
    ))
}

/// The text of NVRTC header `name` (`ss/common.cuh`) the kernels are compiled with.
pub fn ss_header(name: &str) -> &'static str {
    gvr_bench::gpu::sources::HEADERS
        .iter()
        .find(|(header, _)| *header == name)
        .unwrap_or_else(|| panic!("{name} is an NVRTC header"))
        .1
}

/// The GPU for the on-device halves of the ss tests: only with
/// `GVR_GPU_TESTS=1` (set on the H200, where a missing GPU then fails);
/// without it the GPU half announces that it was not run.
pub fn open_gpu() -> Option<Arc<Gpu>> {
    if std::env::var("GVR_GPU_TESTS").as_deref() != Ok("1") {
        eprintln!("GPU half NOT RUN: set GVR_GPU_TESTS=1 on a machine with a GPU");
        return None;
    }
    Some(Gpu::open(0).unwrap_or_else(|e| panic!("GVR_GPU_TESTS=1 but no usable GPU: {e}")))
}

/// Run GPU arm `arm_name` twice on `b`; check every row (NaN rows: structure only).
pub fn gpu_check(gpu: &Arc<Gpu>, arm_name: &str, b: &Batch, label: &str) {
    let mut arm = registry::create(arm_name, Some(gpu.clone())).expect("arm builds");
    let variant = arm.variant(&Shape::of(b));
    arm.stage(b)
        .unwrap_or_else(|e| panic!("{label}: stage: {e}"));
    arm.poison_output().unwrap();
    for launch in 0..2 {
        arm.launch()
            .unwrap_or_else(|e| panic!("{label}: launch: {e}"));
        let out = arm.read_output().unwrap_or_else(|e| panic!("{label}: {e}"));
        let nan_rows: Vec<usize> = (0..b.rows)
            .filter(|&r| b.row(r).iter().any(|x| x.is_nan()))
            .collect();
        if nan_rows.is_empty() {
            let status = check_batch(b, &out);
            assert!(
                status.is_exact(),
                "{label} ({variant:?}) launch {launch}: {status:?}"
            );
        } else {
            for r in nan_rows {
                let slots = &out[r * b.k..(r + 1) * b.k];
                let mut seen = slots.to_vec();
                seen.sort_unstable();
                seen.dedup();
                assert_eq!(seen.len(), b.k, "{label} row {r}: duplicate indices");
                assert!(
                    slots
                        .iter()
                        .all(|&i| i >= 0 && (i as usize) < b.row(r).len()),
                    "{label} row {r}"
                );
            }
        }
    }
}

/// A production varlen call for the emulators: `check` holds each row with
/// its own length (what the output is checked against); `input` is what the
/// kernel receives — the same logits, kv_lens in the first entries of the
/// length array, request-level hints in the first rows of the hint array
/// (even requests: their first row's top indices; odd ones: junk).
pub struct VarlenEmuCase {
    pub check: Batch,
    pub input: Batch,
}

impl VarlenEmuCase {
    /// The same call on a column-sliced view of a wider arena (the
    /// upstream checklist's sliced-arena case): the row stride becomes the next multiple of 256 above this
    /// case's stride, every row keeps its values and pad, and the arena's
    /// columns past the slice (another tensor's data) hold +3e38, which a
    /// kernel reading past its rows would pick.
    pub fn in_arena(&self) -> VarlenEmuCase {
        let stride = (self.check.npad + 1).div_ceil(256) * 256;
        let widen = |b: &Batch| {
            let mut logits = vec![3e38f32; b.rows * stride];
            for r in 0..b.rows {
                logits[r * stride..r * stride + b.npad]
                    .copy_from_slice(&b.logits[r * b.npad..(r + 1) * b.npad]);
            }
            Batch {
                npad: stride,
                logits,
                ..b.clone()
            }
        };
        VarlenEmuCase {
            check: widen(&self.check),
            input: widen(&self.input),
        }
    }
}

/// kv_lens for `widths` (valid lengths of each request's last row) under
/// (`next_n`, `cr`), led by two zero-window requests (kv = 0 and next_n − 1)
/// and closed by the last width plus `cr − 1` tokens (rounding under cr).
pub fn varlen_kv(next_n: u32, cr: u32, widths: &[u32]) -> Vec<u32> {
    let tokens = |width: u32| width * cr + next_n - 1;
    let mut kv = vec![0, next_n - 1];
    kv.extend(widths.iter().map(|&w| tokens(w)));
    if let Some(&last) = widths.last() {
        kv.push(tokens(last) + cr - 1);
    }
    kv
}

/// One request source row per kv entry (cycling through the row generators).
pub fn varlen_emu_case(
    k: usize,
    next_n: u32,
    cr: u32,
    kv_lens: &[u32],
    seed: u64,
) -> VarlenEmuCase {
    use rand::SeedableRng;
    let generators = gvr_bench::exact::row_generators();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let longest = kv_lens
        .iter()
        .map(|&kv| (kv / cr) as usize + 1)
        .max()
        .unwrap_or(1);
    let sources: Vec<Vec<f32>> = (0..kv_lens.len())
        .map(|q| {
            (generators[q % generators.len()].generate)(&mut rng as &mut dyn rand::RngCore, longest)
        })
        .collect();
    let refs: Vec<&[f32]> = sources.iter().map(Vec::as_slice).collect();
    let mut check = Batch::varlen(&refs, kv_lens, next_n, cr, k, None).expect("varlen batch");
    for q in 0..kv_lens.len() {
        let r = q * next_n as usize;
        let request_hints = if q % 2 == 0 && check.row(r).len() > k {
            gvr_bench::exact::reference_topk(check.row(r), k)
        } else {
            (0..k as i32).map(|j| j * 7 - 3).collect()
        };
        check.hints[r * k..(r + 1) * k].copy_from_slice(&request_hints);
    }
    let input = varlen_emu_input(&check);
    VarlenEmuCase { check, input }
}

/// What a varlen kernel receives for the varlen batch `check`: the same
/// logits, the kv_lens in the first entries of the length array (0 after),
/// and request q's hints — the hint list of its first row in `check` — in
/// hint row q.
pub fn varlen_emu_input(check: &Batch) -> Batch {
    let v = check.varlen.as_ref().expect("a varlen batch");
    let k = check.k;
    let mut input = check.clone();
    input.n = (0..check.rows)
        .map(|r| v.kv_lens.get(r).copied().unwrap_or(0))
        .collect();
    input.hints = vec![-1; check.rows * k];
    for q in 0..v.kv_lens.len() {
        input.hints[q * k..(q + 1) * k].copy_from_slice(check.hints(q * v.next_n as usize));
    }
    input
}

/// A varlen soak call for the emulators: certify's varlen soak batch of
/// `seed` within `limits` (pads poisoned with +3e38) as `check`, and its
/// kernel input; the label names the seed and the rows.
pub fn varlen_soak_case(
    seed: u64,
    k: usize,
    limits: gvr_bench::exact::soak::VarlenLimits,
) -> (VarlenEmuCase, String) {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let case = gvr_bench::exact::soak::varlen_case(&mut rng, seed, k, limits);
    let mut check = case.batch;
    check.poison_pad(PAD);
    let input = varlen_emu_input(&check);
    (VarlenEmuCase { check, input }, case.name)
}

// The soak's hint lists and hazard rows are certify's own (`certify --soak`).
#[allow(unused_imports)] // each test binary uses its own part
pub use gvr_bench::exact::soak::{hazard_row, hints_for, HINT_MODES};

/// Rows from every generator × hint mode, lengths cycling through `lengths`.
pub fn generated_batch(
    rng: &mut rand_chacha::ChaCha8Rng,
    k: usize,
    lengths: &[usize],
    modes: &[&str],
) -> Batch {
    let mut rows = Vec::new();
    let mut hints = Vec::new();
    let mut i = 0usize;
    for g in &gvr_bench::exact::row_generators() {
        for mode in modes {
            let n = lengths[i % lengths.len()];
            i += 1;
            let row = (g.generate)(rng as &mut dyn rand::RngCore, n);
            hints.push(hints_for(&row, k, mode, rng));
            rows.push(row);
        }
    }
    batch(&rows, &hints, k)
}

/// The hint modes the GPU tests cycle through: perfect, random, absent,
/// degenerate.
pub fn cycled_hint_mode(i: usize) -> &'static str {
    ["perfect", "random", "absent", "degenerate"][i % 4]
}

/// `rows` rows of length `n` cycling through the generators, with the hint
/// modes of [`cycled_hint_mode`] in turn.
pub fn generated_rows(rng: &mut rand_chacha::ChaCha8Rng, rows: usize, n: usize, k: usize) -> Batch {
    let gens = gvr_bench::exact::row_generators();
    let mut data = Vec::new();
    let mut hints = Vec::new();
    for r in 0..rows {
        let row = (gens[r % gens.len()].generate)(rng as &mut dyn rand::RngCore, n);
        hints.push(hints_for(
            &row,
            k,
            cycled_hint_mode(r / gens.len() + r),
            rng,
        ));
        data.push(row);
    }
    batch(&data, &hints, k)
}

/// One row per entry of `lengths` (cycling through the generators), hints in
/// the [`cycled_hint_mode`]s.
pub fn mixed_length_batch(rng: &mut rand_chacha::ChaCha8Rng, lengths: &[usize], k: usize) -> Batch {
    let gens = gvr_bench::exact::row_generators();
    let mut data = Vec::new();
    let mut hints = Vec::new();
    for (i, &n) in lengths.iter().enumerate() {
        let row = (gens[i % gens.len()].generate)(rng as &mut dyn rand::RngCore, n);
        hints.push(hints_for(&row, k, cycled_hint_mode(i), rng));
        data.push(row);
    }
    batch(&data, &hints, k)
}

/// `rows` uniform rows of length `n` with 300 NaNs of both signs each
/// (outputs are checked for structure only).
pub fn nan_rows(rng: &mut rand_chacha::ChaCha8Rng, rows: usize, n: usize, k: usize) -> Batch {
    use rand::Rng;
    let mut data = Vec::new();
    for _ in 0..rows {
        let mut row: Vec<f32> = (0..n).map(|_| rng.random::<f32>()).collect();
        for _ in 0..300 {
            let i = rng.random_range(0..row.len());
            row[i] = if rng.random::<bool>() {
                f32::NAN
            } else {
                -f32::NAN
            };
        }
        data.push(row);
    }
    batch(&data, &[], k)
}

/// Seeds of the randomized soak rounds of the emulator tests. By default
/// `default_rounds` rounds from a fixed base (so CI runs the same rounds every
/// time); `GVR_EMU_SOAK=<rounds>` runs that many instead and
/// `GVR_EMU_SOAK_SEED=<seed>` moves the base. Round i is seeded `base + i`
/// alone, and every failure names its seed, so
/// `GVR_EMU_SOAK=1 GVR_EMU_SOAK_SEED=<seed>` replays one failing round.
pub fn soak_seeds(default_rounds: usize, default_base: u64) -> Vec<u64> {
    let env_number = |name: &str| -> Option<u64> {
        let text = std::env::var(name).ok()?;
        Some(
            text.trim()
                .parse()
                .unwrap_or_else(|_| panic!("{name}={text:?} is not a whole number")),
        )
    };
    let rounds = env_number("GVR_EMU_SOAK").map_or(default_rounds, |r| r as usize);
    let base = env_number("GVR_EMU_SOAK_SEED").unwrap_or(default_base);
    (0..rounds as u64).map(|i| base.wrapping_add(i)).collect()
}

/// Soak rows: one hazard row per entry of `lengths`, each with a hint list in
/// a random mode (`absent` throughout when `hint_free`), as a batch, plus one
/// label per row naming its generator, hazard, hint mode and length.
pub fn soak_batch(
    rng: &mut rand_chacha::ChaCha8Rng,
    k: usize,
    lengths: &[usize],
    hint_free: bool,
) -> (Batch, Vec<String>) {
    use rand::Rng;
    let mut labels = Vec::with_capacity(lengths.len());
    let mut rows = Vec::with_capacity(lengths.len());
    let mut hints = Vec::with_capacity(lengths.len());
    for &n in lengths {
        let (label, row) = hazard_row(rng, n, k);
        let mode = if hint_free {
            "absent"
        } else {
            HINT_MODES[rng.random_range(0..HINT_MODES.len())]
        };
        hints.push(hints_for(&row, k, mode, rng));
        labels.push(format!("{label}/{mode} n={n}"));
        rows.push(row);
    }
    (batch(&rows, &hints, k), labels)
}

/// The varlen soak rounds of an emulator test: for each seed of
/// [`soak_seeds`]`(4, base)`, k = `ks[seed % 3]` and [`varlen_soak_case`]
/// within `limits`; the label names the seed, k and the rows.
pub fn varlen_soak_rounds(
    base: u64,
    ks: [usize; 3],
    limits: gvr_bench::exact::soak::VarlenLimits,
) -> impl Iterator<Item = (VarlenEmuCase, String)> {
    soak_seeds(4, base).into_iter().map(move |seed| {
        let k = ks[(seed % 3) as usize];
        let (case, name) = varlen_soak_case(seed, k, limits);
        (case, format!("{name} k={k}"))
    })
}

/// The `ss-regclus` launch for `shape` (the family forced, production knobs).
pub fn plan_regclus(
    shape: &Shape,
    dev: &DeviceProfile,
) -> Result<gvr_bench::topk::families::reg_clus::ClusLaunch, String> {
    match gvr_bench::topk::Plan::forced(
        gvr_bench::topk::Family::RegClus,
        shape,
        dev,
        &Tuning::default(),
    )? {
        gvr_bench::topk::Plan::RegClus(p) => Ok(p),
        other => panic!("reg_clus planned {other:?}"),
    }
}

/// The `ss-clus` launch for `shape` (the family forced, production knobs).
pub fn plan_clus_stream_forced(
    shape: &Shape,
    dev: &DeviceProfile,
) -> Result<gvr_bench::topk::families::clus::ClusStreamLaunch, String> {
    match gvr_bench::topk::Plan::forced(
        gvr_bench::topk::Family::Clus,
        shape,
        dev,
        &Tuning::default(),
    )? {
        gvr_bench::topk::Plan::Clus(p) => Ok(p),
        other => panic!("clus planned {other:?}"),
    }
}

/// The clus launch `ss` runs for `shape`, or why the route runs another family.
pub fn plan_clus_stream(
    shape: &Shape,
    dev: &DeviceProfile,
) -> Result<gvr_bench::topk::families::clus::ClusStreamLaunch, String> {
    match gvr_bench::topk::Plan::routed(shape, dev, &Tuning::default())? {
        gvr_bench::topk::Plan::Clus(p) => Ok(p),
        other => Err(format!("the route runs {}", other.family_variant())),
    }
}
