//! The production varlen entry on the GPU (src/varlen, on the
//! cases of the upstream varlen checklist): per-request kv_lens on
//! the device, next_n 1–4, compress ratio 1/4, request-level hints and
//! hint-free, the values output, zero-window and short rows, every family
//! the envelope routes to, and CUDA-graph capture + replay while kv_lens
//! grows (rows crossing n ≤ k and the 131,072 band inside the graph).
//!
//! Every row's padding past its own n is poisoned with +3e38, and every
//! output is checked against the CPU reference for the row's own length.
//!
//! Runs only with `GVR_GPU_TESTS=1` (set on the H200; there a missing GPU
//! fails). Without it the plan half still runs on the CPU.

use std::sync::Arc;

use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::CudaSlice;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

use crate::support::ss::open_gpu;
use gvr_bench::exact::{check_batch, reference_topk};
use gvr_bench::gpu::Gpu;
use gvr_bench::grid::Batch;
use gvr_bench::topk::route::DeviceProfile;
use gvr_bench::topk::varlen::{envelope, plan, EnvelopeSource, VarlenIo, VarlenShape, VarlenTopK};

const POISON: f32 = 3e38;

fn shape(requests: usize, npad: usize, k: usize, next_n: u32, cr: u32) -> VarlenShape {
    VarlenShape {
        rows: requests * next_n as usize,
        npad,
        k,
        next_n,
        compress_ratio: cr,
    }
}

/// Stride for the longest row the kv_lens can give (a multiple of 64).
fn stride_for(kv_max: i32, cr: u32) -> usize {
    ((kv_max.max(1) as usize / cr as usize) + 1).div_ceil(64) * 64
}

/// The inputs of one call: `randn − 2` rows, +3e38 past each row's n, and
/// request-level hints (60 % of the first row's true top-K, then random).
struct Inputs {
    logits: Vec<f32>,
    lens: Vec<usize>,
    hints: Vec<i32>,
}

fn inputs(s: &VarlenShape, kv: &[i32], seed: u64) -> Inputs {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let lens = s.row_lengths(kv).expect("kv_lens fit the shape");
    let mut logits = vec![POISON; s.rows * s.npad];
    for (r, &n) in lens.iter().enumerate() {
        for x in &mut logits[r * s.npad..r * s.npad + n] {
            *x = rng.sample::<f32, _>(StandardNormal) - 2.0;
        }
    }
    let mut hints = vec![-1i32; s.requests() * s.k];
    for q in 0..s.requests() {
        let r = q * s.next_n as usize;
        let n = lens[r];
        if n == 0 {
            continue;
        }
        let top = reference_topk(&logits[r * s.npad..r * s.npad + n], s.k.min(n));
        for (j, slot) in hints[q * s.k..(q + 1) * s.k].iter_mut().enumerate() {
            *slot = if j < s.k * 6 / 10 && j < top.len() {
                top[j]
            } else {
                rng.random_range(0..n as i32)
            };
        }
    }
    Inputs {
        logits,
        lens,
        hints,
    }
}

/// Check indices (and values) of a call against the reference per row.
fn check(s: &VarlenShape, inp: &Inputs, out: &[i32], values: Option<&[f32]>, label: &str) {
    let batch = Batch {
        rows: s.rows,
        npad: s.npad,
        k: s.k,
        logits: inp.logits.clone(),
        n: inp.lens.iter().map(|&n| n as u32).collect(),
        hints: vec![-1; s.rows * s.k],
        varlen: None,
    };
    let status = check_batch(&batch, out);
    assert!(status.is_exact(), "{label}: {status:?}");
    for (r, &n) in inp.lens.iter().enumerate() {
        let row = &out[r * s.k..(r + 1) * s.k];
        if n <= s.k {
            // Short and zero-window rows: identity then −1.
            for (j, &i) in row.iter().enumerate() {
                let want = if j < n { j as i32 } else { -1 };
                assert_eq!(i, want, "{label}: short row {r} (n {n}) slot {j}");
            }
        }
        if let Some(v) = values {
            for j in 0..s.k {
                let i = row[j];
                let want = if i >= 0 {
                    inp.logits[r * s.npad + i as usize]
                } else {
                    f32::MIN
                };
                assert_eq!(
                    v[r * s.k + j].to_bits(),
                    want.to_bits(),
                    "{label}: value r{r} j{j}"
                );
            }
        }
    }
}

struct Call {
    launcher: VarlenTopK,
    logits: CudaSlice<f32>,
    kv: CudaSlice<i32>,
    hints: Option<CudaSlice<i32>>,
    out: CudaSlice<i32>,
    values: Option<CudaSlice<f32>>,
}

impl Call {
    fn new(
        gpu: &Arc<Gpu>,
        s: &VarlenShape,
        n_env: usize,
        hints: bool,
        values: bool,
        inp: &Inputs,
        kv: &[i32],
    ) -> Call {
        let p = plan(
            s,
            n_env,
            hints,
            &DeviceProfile {
                sms: gpu.facts.sms,
                ..DeviceProfile::h200()
            },
        )
        .unwrap_or_else(|e| panic!("plan {s:?}: {e}"));
        Call {
            launcher: VarlenTopK::new(gpu, p).expect("launcher"),
            logits: gpu.upload(&inp.logits).unwrap(),
            kv: gpu.upload(kv).unwrap(),
            hints: hints.then(|| gpu.upload(&inp.hints).unwrap()),
            out: gpu.upload(&vec![i32::MIN; s.rows * s.k]).unwrap(),
            values: values.then(|| gpu.zeroed::<f32>(s.rows * s.k).unwrap()),
        }
    }

    fn launch(&mut self) {
        let mut io = VarlenIo {
            logits: &self.logits,
            kv_lens: &self.kv,
            hints: self.hints.as_ref(),
            indices: &mut self.out,
            values: self.values.as_mut(),
        };
        self.launcher.launch(&mut io).expect("launch");
    }

    fn read(&self, gpu: &Arc<Gpu>) -> (Vec<i32>, Option<Vec<f32>>) {
        gpu.synchronize().unwrap();
        let out = gpu.stream.clone_dtoh(&self.out).unwrap();
        let values = self
            .values
            .as_ref()
            .map(|v| gpu.stream.clone_dtoh(v).unwrap());
        (out, values)
    }
}

/// One eager call (envelope = the stride's longest row), checked.
fn eager(
    gpu: &Arc<Gpu>,
    s: &VarlenShape,
    kv: &[i32],
    hints: bool,
    values: bool,
    label: &str,
) -> String {
    let inp = inputs(s, kv, label.len() as u64 * 7919 + s.rows as u64);
    let msl = (s.npad * s.compress_ratio as usize) as u64;
    let n_env = envelope(s, EnvelopeSource::MaxSeqLen(msl));
    let mut call = Call::new(gpu, s, n_env, hints, values, &inp, kv);
    call.launch();
    let (out, vals) = call.read(gpu);
    check(s, &inp, &out, vals.as_deref(), label);
    call.launcher.plan().variant()
}

/// The upstream varlen checklist's cases plus the values output.
fn contract_cases() -> Vec<(String, VarlenShape, Vec<i32>)> {
    let mut cases = Vec::new();
    let mut push = |label: &str, k: usize, next_n: u32, cr: u32, kv: Vec<i32>| {
        let kv_max = kv.iter().copied().max().unwrap_or(1);
        let s = shape(kv.len(), stride_for(kv_max, cr), k, next_n, cr);
        cases.push((label.to_string(), s, kv));
    };
    push("item9a", 512, 1, 1, vec![33000, 8200, 300]);
    push("item9b", 512, 1, 4, vec![131_075, 32_800, 2000]);
    push("item9c", 512, 2, 1, vec![9000, 5001]);
    push("item9d", 1024, 4, 4, vec![65_540]);
    push("item9e", 512, 3, 4, vec![40_000, 7003]);
    push("item9-values", 512, 2, 4, vec![40_000, 1900]);
    push(
        "item10-split",
        1024,
        1,
        1,
        (0..16).map(|i| 40_000 + 977 * i).collect(),
    );
    push(
        "item10-blk512",
        512,
        1,
        1,
        (0..200).map(|i| 6000 + 64 * i).collect(),
    );
    push("item11-zero-kv", 512, 4, 1, vec![0, 8192]);
    push("item16-zero-window", 512, 4, 4, vec![262_144, 1]);
    push(
        "k2048-boundary",
        2048,
        1,
        1,
        vec![131_075, 131_076, 4111, 2048, 2049],
    );
    let mut rng = ChaCha8Rng::seed_from_u64(19);
    for (rows, k) in [(304usize, 512usize), (1024, 2048)] {
        let kv: Vec<i32> = (0..rows)
            .map(|i| match i % 6 {
                0 => 65_536,                        // full
                1 => rng.random_range(1..k as i32), // short
                2 => 0,                             // zero window
                3 => k as i32 + 1,                  // just above short
                _ => rng.random_range(k as i32..65_536),
            })
            .collect();
        push(&format!("item19-{rows}rows-k{k}"), k, 1, 1, kv);
    }
    cases
}

/// A column-sliced view of a wider arena (the upstream checklist's sliced-arena case): the same
/// rows at the next multiple of 256 above the slice's stride; the launch keeps
/// the slice's envelope (planned for the slice, launched on the arena).
fn arena_of(slice: &VarlenShape) -> (VarlenShape, usize) {
    let arena = VarlenShape {
        npad: (slice.npad + 1).div_ceil(256) * 256,
        ..*slice
    };
    let msl = (slice.npad * slice.compress_ratio as usize) as u64;
    (arena, envelope(slice, EnvelopeSource::MaxSeqLen(msl)))
}

#[test]
#[cfg_attr(
    no_gpu_tests,
    ignore = "needs a GPU: build and run with GVR_GPU_TESTS=1"
)]
fn plans_cover_every_contract_case_on_the_cpu() {
    let dev = DeviceProfile::h200();
    for (label, s, kv) in contract_cases() {
        assert!(s.validate().is_ok(), "{label}");
        assert!(s.row_lengths(&kv).is_ok(), "{label}");
        let n_env = envelope(
            &s,
            EnvelopeSource::MaxSeqLen((s.npad * s.compress_ratio as usize) as u64),
        );
        let (arena, arena_env) = arena_of(&s);
        assert!(arena.validate().is_ok(), "{label} arena");
        assert!(arena.row_lengths(&kv).is_ok(), "{label} arena");
        for hints in [true, false] {
            assert!(plan(&s, n_env, hints, &dev).is_ok(), "{label}");
            assert!(
                plan(&arena, arena_env, hints, &dev).is_ok(),
                "{label} arena"
            );
        }
    }
}

#[test]
#[ignore = "needs the H200: run with GVR_GPU_TESTS=1 --include-ignored"]
fn contract_cases_are_exact_with_and_without_hints() {
    let Some(gpu) = open_gpu() else { return };
    for (label, s, kv) in contract_cases() {
        for hints in [true, false] {
            let values = label.contains("values") || label.starts_with("item11");
            let variant = eager(
                &gpu,
                &s,
                &kv,
                hints,
                values,
                &format!("{label} hints={hints}"),
            );
            println!("{label} hints={hints} values={values}: {variant} exact");
        }
    }
}

/// The GPU twin of the emulator's arena case: every contract case on its
/// arena view, +3e38 in every column past a row's n (the slice's own padding
/// and the arena's foreign columns alike), checked per row as usual.
#[test]
#[ignore = "needs the H200: run with GVR_GPU_TESTS=1 --include-ignored"]
fn column_sliced_arena_views_are_exact() {
    let Some(gpu) = open_gpu() else { return };
    for (label, slice, kv) in contract_cases() {
        let (arena, n_env) = arena_of(&slice);
        for hints in [true, false] {
            let label = format!("{label} arena {} hints={hints}", arena.npad);
            let inp = inputs(
                &arena,
                &kv,
                label.len() as u64 * 104_729 + arena.rows as u64,
            );
            let mut call = Call::new(&gpu, &arena, n_env, hints, false, &inp, &kv);
            call.launch();
            let (out, _) = call.read(&gpu);
            check(&arena, &inp, &out, None, &label);
            println!("{label}: {} exact", call.launcher.plan().variant());
        }
    }
}

#[test]
#[ignore = "needs the H200: run with GVR_GPU_TESTS=1 --include-ignored"]
fn values_output_matches_the_gather() {
    // Upstream checklist case: k = 512, n = 8192, 2 rows; and a short row's values.
    let Some(gpu) = open_gpu() else { return };
    let s = shape(2, 8192, 512, 1, 1);
    eager(&gpu, &s, &[8192, 8192], true, true, "item3");
    let s = shape(2, 8192, 512, 1, 1);
    eager(&gpu, &s, &[8192, 300], false, true, "item3-short");
}

#[test]
#[ignore = "needs the H200: run with GVR_GPU_TESTS=1 --include-ignored"]
fn every_family_replays_in_a_cuda_graph_while_kv_lens_grow() {
    let Some(gpu) = open_gpu() else { return };
    // (label, shape, kv at step 0, growth per step): each row's kv grows by
    // `growth` tokens per replay; the graph was captured once.
    let cases: Vec<(&str, VarlenShape, Vec<i32>, i32)> = vec![
        // Upstream checklist case: 4 rows, k = 512, msl 262,144; row 0 crosses n ≤ k,
        // row 1 walks over the 131,072 band edge.
        (
            "item13-main",
            shape(4, 262_144, 512, 1, 1),
            vec![400, 131_000, 200_000, 5],
            40,
        ),
        (
            "reg",
            shape(64, 6144, 512, 1, 4),
            (0..64).map(|i| 20_000 + 37 * i).collect(),
            97,
        ),
        (
            "reg_clus",
            shape(8, 65_536, 512, 1, 1),
            vec![65_000, 900, 0, 30_000, 511, 512, 513, 64_000],
            75,
        ),
        (
            "clus",
            shape(30, 100_032, 512, 1, 1),
            (0..30).map(|i| 80_000 + 503 * i).collect(),
            211,
        ),
        (
            "mtp-main-k2048",
            shape(16, 131_072, 2048, 4, 4),
            (0..16).map(|i| 8000 * i).collect(),
            1999,
        ),
        (
            "big-batch-k2048",
            shape(512, 131_072, 2048, 1, 1),
            (0..512).map(|i| 60_000 + 97 * i).collect(),
            17,
        ),
    ];
    for (label, s, kv0, growth) in cases {
        for hints in [true, false] {
            let msl = (s.npad * s.compress_ratio as usize) as u64;
            let n_env = envelope(&s, EnvelopeSource::MaxSeqLen(msl));
            let inp0 = inputs(&s, &kv0, 1);
            let mut call = Call::new(&gpu, &s, n_env, hints, true, &inp0, &kv0);
            let family = match &call.launcher.plan().launch {
                gvr_bench::topk::Plan::Main(_) => "main",
                gvr_bench::topk::Plan::Reg(_) => "reg",
                gvr_bench::topk::Plan::Clus(_) => "clus",
                gvr_bench::topk::Plan::RegClus(_) => "reg_clus",
            };
            // Warm-up (compiles and loads everything), then capture.
            call.launch();
            gpu.synchronize().unwrap();
            let stream = gpu.stream.clone();
            stream
                .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
                .expect("begin capture");
            call.launch();
            let graph = stream
                .end_capture(CUgraphInstantiate_flags(0))
                .expect("end capture (a host read inside the launch would fail it)")
                .expect("a graph was captured");
            for step in 0..5 {
                let kv: Vec<i32> = kv0
                    .iter()
                    .map(|&x| if x == 0 { 0 } else { x + growth * step })
                    .collect();
                let inp = inputs(&s, &kv, 100 + step as u64);
                stream.memcpy_htod(&inp.logits, &mut call.logits).unwrap();
                stream.memcpy_htod(&kv, &mut call.kv).unwrap();
                if let Some(h) = call.hints.as_mut() {
                    stream.memcpy_htod(&inp.hints, h).unwrap();
                }
                graph.launch().expect("graph replay");
                let (out, vals) = call.read(&gpu);
                check(
                    &s,
                    &inp,
                    &out,
                    vals.as_deref(),
                    &format!("{label} hints={hints} step {step}"),
                );
            }
            println!(
                "{label} ({family}) hints={hints}: 5 graph replays exact, {}",
                call.launcher.plan().variant()
            );
        }
    }
}

#[test]
#[ignore = "needs the H200: run with GVR_GPU_TESTS=1 --include-ignored"]
fn bad_buffers_are_refused_before_any_launch() {
    let Some(gpu) = open_gpu() else { return };
    let s = shape(2, 8192, 512, 2, 1);
    let kv = [8000, 8100];
    let inp = inputs(&s, &kv, 3);
    let mut call = Call::new(&gpu, &s, 8192, false, false, &inp, &kv);
    let wrong_kv = gpu.upload(&[1i32, 2, 3]).unwrap();
    let mut io = VarlenIo {
        logits: &call.logits,
        kv_lens: &wrong_kv,
        hints: None,
        indices: &mut call.out,
        values: None,
    };
    let e = call.launcher.launch(&mut io).unwrap_err().to_string();
    assert!(e.contains("kv_lens holds 3 entries for 2 requests"), "{e}");
    let hints = gpu.upload(&vec![0i32; 2 * 512]).unwrap();
    io.kv_lens = &call.kv;
    io.hints = Some(&hints);
    let e = call.launcher.launch(&mut io).unwrap_err().to_string();
    assert!(e.contains("hint-free"), "{e}");
    // Request-shaped indices under MTP ([requests, k] for rows = 2·requests)
    // would be written out of bounds: refused, as upstream requires.
    let mut short_out = gpu.upload(&vec![0i32; s.requests() * s.k]).unwrap();
    let mut io = VarlenIo {
        logits: &call.logits,
        kv_lens: &call.kv,
        hints: None,
        indices: &mut short_out,
        values: None,
    };
    let e = call.launcher.launch(&mut io).unwrap_err().to_string();
    assert!(
        e.contains("indices holds 1024 elements, the launch needs 2048"),
        "{e}"
    );
}
