//! GPU runtime: context, NVRTC build with a disk cache, buffers, launches.
//!
//! Everything that touches the CUDA driver sits behind [`Gpu`]. Opening it on
//! a machine without a driver or device returns `GvrError::Gpu` (exit 3) and
//! never panics: cudarc's dynamic loader panics on a missing library, so the
//! library is probed first and every first-touch driver call runs under
//! `catch_unwind`.
//!
//! One [`Gpu`] owns one context and one stream. Every arm enqueues on
//! `gpu.stream` so the timer's flush, events and the arm's kernels are
//! ordered on a single queue. cudarc's per-buffer event tracking is turned
//! off for the same reason: with one stream it buys nothing, and it would
//! insert extra event records into the timed window.

pub mod batch;
pub mod cache;
pub mod cupti;
pub mod flush;
pub mod launch;
pub mod nvrtc;
pub mod probe;
pub mod sources;

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
pub use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use serde::{Deserialize, Serialize};

use crate::error::{GvrError, Result};
pub use batch::{DeviceBatch, SharedInputs, StagedInputs, Workspace, UNWRITTEN};
pub use cache::{cache_key, default_cache_dir, CacheKeyInputs, DiskCache};
pub use flush::L2Flusher;
pub use launch::KernelArgs;
pub use nvrtc::{compile_report, CompileReport, EntryInfo};
pub use sources::KernelSource;

/// Static facts about the device, recorded with every run (env manifest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceFacts {
    pub name: String,
    pub ordinal: usize,
    /// Streaming multiprocessors (132 on H200 SXM).
    pub sms: u32,
    pub l2_bytes: u64,
    /// Opt-in shared memory per block (227 KiB on Hopper).
    pub smem_per_block_optin: u64,
    pub cc_major: i32,
    pub cc_minor: i32,
    /// NVRTC `--gpu-architecture` used for this device (`sm_90a`).
    pub arch: String,
    /// `cuDriverGetVersion`, e.g. 13000 for CUDA 13.0.
    pub driver_version: i32,
    /// Maximum SM clock (kHz), if the driver reports it.
    pub sm_clock_khz: Option<u32>,
    /// Maximum memory clock (kHz), if the driver reports it.
    pub mem_clock_khz: Option<u32>,
    pub mem_bus_width_bits: Option<u32>,
    pub total_mem_bytes: u64,
    /// `GPU-xxxxxxxx-...` as nvidia-smi prints it, if available.
    pub uuid: Option<String>,
}

/// How many modules came from where, so a CLI can say "compiled 0 kernels".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompileStats {
    /// Compiled by NVRTC in this process.
    pub compiled: usize,
    /// Loaded from the on-disk cache.
    pub disk_hits: usize,
    /// Served from the in-process memo.
    pub memo_hits: usize,
}

/// How many NVRTC compiles run at once before the first case: one per
/// available core (compiles are independent and CPU-bound).
pub fn prebuild_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// One module build: a source and the defines it is compiled with (what
/// [`Gpu::module`] takes), as an arm plans it for a shape ([`crate::arms::Arm::builds`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelBuild {
    pub source: KernelSource,
    pub defines: sources::Defines,
}

/// An open device: one context, one stream, a module cache.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub facts: DeviceFacts,
    disk_cache: DiskCache,
    modules: Mutex<HashMap<String, Arc<CudaModule>>>,
    compiled: AtomicUsize,
    disk_hits: AtomicUsize,
    memo_hits: AtomicUsize,
    /// Nanoseconds spent in NVRTC compiles (for the run's phase breakdown).
    compile_ns: AtomicU64,
    /// The current case's inputs on the device, shared by every arm's
    /// `DeviceBatch::upload` of that batch (see `StagedInputs::share`).
    shared_inputs: Mutex<Option<Arc<batch::StagedInputs>>>,
    /// Build the ss sources with the phase probe (`set_phase_probe`).
    phase_probe: AtomicBool,
    /// The probe builds loaded so far, by cache key: their stamp arrays are
    /// what `reset_phase_stamps` / `read_phase_stamps` touch.
    probe_modules: Mutex<Vec<(String, Arc<CudaModule>)>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("facts", &self.facts)
            .finish_non_exhaustive()
    }
}

fn probe_err(build: &str, e: cudarc::driver::DriverError) -> GvrError {
    GvrError::Kernel {
        name: probe::STAMPS_SYMBOL.to_string(),
        message: format!("phase stamps of {build}: {e:?}"),
    }
}

/// Convert a panic payload from cudarc's loader into text.
fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic in the CUDA loader".to_string()
    }
}

/// Run a first-touch driver call, turning both a driver error and a loader
/// panic (missing symbol) into `GvrError::Gpu`.
fn guarded<T>(
    what: &str,
    call: impl FnOnce() -> std::result::Result<T, cudarc::driver::DriverError>,
) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(call)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(GvrError::Gpu(format!("{what}: {e:?}"))),
        Err(payload) => Err(GvrError::Gpu(format!("{what}: {}", panic_text(payload)))),
    }
}

/// Map a driver error during normal operation to a `GvrError::Gpu`.
pub(crate) fn driver_err(what: &str) -> impl Fn(cudarc::driver::DriverError) -> GvrError + '_ {
    move |e| GvrError::Gpu(format!("{what}: {e:?}"))
}

/// Whether libcuda can be loaded at all (no driver → false).
pub fn driver_available() -> bool {
    // SAFETY: only tries to dlopen candidate library names.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

fn driver_version() -> Result<i32> {
    let mut version = 0i32;
    let status = catch_unwind(AssertUnwindSafe(|| unsafe {
        cudarc::driver::sys::cuDriverGetVersion(&mut version)
    }))
    .map_err(|p| GvrError::Gpu(format!("cuDriverGetVersion: {}", panic_text(p))))?;
    if status != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        return Err(GvrError::Gpu(format!("cuDriverGetVersion: {status:?}")));
    }
    Ok(version)
}

fn uuid_text(bytes: &[std::ffi::c_char; 16]) -> String {
    let b: Vec<u8> = bytes.iter().map(|&c| c as u8).collect();
    let hex =
        |r: std::ops::Range<usize>| b[r].iter().map(|x| format!("{x:02x}")).collect::<String>();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        hex(0..4),
        hex(4..6),
        hex(6..8),
        hex(8..10),
        hex(10..16)
    )
}

impl Gpu {
    /// The device facts as JSON, for run manifests.
    pub fn facts_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.facts).unwrap_or(serde_json::Value::Null)
    }

    /// Open device `ordinal`: context, stream and facts. Fails with
    /// `GvrError::Gpu` and the reason when there is no driver or device.
    /// CUPTI is attached (see [`Gpu::open_with`] to go without).
    pub fn open(ordinal: usize) -> Result<Arc<Gpu>> {
        Self::open_with(ordinal, true)
    }

    /// [`Gpu::open`], attaching CUPTI only when `cupti` (it adds launch
    /// overhead, so a run timed by events or graph replay goes without).
    pub fn open_with(ordinal: usize, cupti: bool) -> Result<Arc<Gpu>> {
        if !driver_available() {
            return Err(GvrError::Gpu(
                "libcuda not found: no NVIDIA driver on this machine (or its directory is not on LD_LIBRARY_PATH)"
                    .into(),
            ));
        }
        let count = guarded("cuInit / cuDeviceGetCount", || {
            cudarc::driver::result::init()?;
            CudaContext::device_count()
        })?;
        if count <= 0 {
            return Err(GvrError::Gpu("the driver reports no CUDA device".into()));
        }
        if ordinal >= count as usize {
            return Err(GvrError::Gpu(format!(
                "device {ordinal} requested but only {count} CUDA device(s) present"
            )));
        }
        // CUPTI attaches most reliably when enabled before the context
        // exists; only when the timer may use it (it adds launch overhead).
        if cupti {
            if let Err(e) = cupti::enable() {
                tracing::debug!("CUPTI not enabled: {e}");
            }
        }
        let ctx = guarded("creating the CUDA context", || CudaContext::new(ordinal))?;
        // SAFETY: single-stream use by design (see module docs); no slice exists yet.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(driver_err("creating a stream"))?;
        let facts = Self::query_facts(&ctx, ordinal)?;
        tracing::info!(
            "GPU {ordinal}: {} ({}, {} SMs, {} MiB L2, driver {})",
            facts.name,
            facts.arch,
            facts.sms,
            facts.l2_bytes >> 20,
            facts.driver_version
        );
        Ok(Arc::new(Gpu {
            ctx,
            stream,
            facts,
            disk_cache: DiskCache::new(default_cache_dir()),
            modules: Mutex::new(HashMap::new()),
            phase_probe: AtomicBool::new(false),
            probe_modules: Mutex::new(Vec::new()),
            compiled: AtomicUsize::new(0),
            disk_hits: AtomicUsize::new(0),
            memo_hits: AtomicUsize::new(0),
            compile_ns: AtomicU64::new(0),
            shared_inputs: Mutex::new(None),
        }))
    }

    fn query_facts(ctx: &Arc<CudaContext>, ordinal: usize) -> Result<DeviceFacts> {
        let attr =
            |a: CUdevice_attribute| ctx.attribute(a).map_err(driver_err("cuDeviceGetAttribute"));
        let optional =
            |a: CUdevice_attribute| ctx.attribute(a).ok().filter(|v| *v > 0).map(|v| v as u32);
        let (cc_major, cc_minor) = ctx
            .compute_capability()
            .map_err(driver_err("compute capability"))?;
        Ok(DeviceFacts {
            name: ctx.name().map_err(driver_err("device name"))?,
            ordinal,
            sms: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            l2_bytes: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
            smem_per_block_optin: attr(
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )? as u64,
            cc_major,
            cc_minor,
            arch: nvrtc::arch_for(cc_major, cc_minor),
            driver_version: driver_version()?,
            sm_clock_khz: optional(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
            mem_clock_khz: optional(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
            mem_bus_width_bits: optional(
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
            ),
            total_mem_bytes: ctx.total_mem().map_err(driver_err("total memory"))? as u64,
            uuid: ctx.uuid().ok().map(|u| uuid_text(&u.bytes)),
        })
    }

    /// The module for `source` built with `defines`, from (in order) the
    /// in-process memo, the on-disk CUBIN cache, or NVRTC.
    pub fn module(
        &self,
        source: &KernelSource,
        defines: &[(&str, String)],
    ) -> Result<Arc<CudaModule>> {
        let probed = self.phase_probe.load(Ordering::Relaxed)
            && probe::PROBED_SOURCES.contains(&source.name);
        if !probed {
            return self.module_built(source, defines);
        }
        let mut with_probe = defines.to_vec();
        with_probe.push((probe::PROBE_DEFINE, "1".to_string()));
        let module = self.module_built(source, &with_probe)?;
        let key = format!("{} {with_probe:?}", source.name);
        let mut list = self
            .probe_modules
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !list.iter().any(|(k, _)| *k == key) {
            list.push((key, module.clone()));
        }
        Ok(module)
    }

    /// From now on, build the self-sampling sources with the phase probe
    /// (`gvr-bench phases`; the timed commands never turn it on). Modules
    /// built before keep their code.
    pub fn set_phase_probe(&self, on: bool) {
        self.phase_probe.store(on, Ordering::Relaxed);
    }

    fn probe_stamp_arrays(&self) -> Vec<(String, Arc<CudaModule>)> {
        self.probe_modules
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Zero the stamp array of every probe build (enqueued on the stream).
    pub fn reset_phase_stamps(&self) -> Result<()> {
        for (key, module) in self.probe_stamp_arrays() {
            let mut stamps = module
                .get_global(probe::STAMPS_SYMBOL, &self.stream)
                .map_err(|e| probe_err(&key, e))?;
            self.stream
                .memset_zeros(&mut stamps)
                .map_err(|e| probe_err(&key, e))?;
        }
        Ok(())
    }

    /// The stamp arrays (u64 words) of the probe builds that some CTA
    /// wrote since the last reset, by build; waits for the stream.
    pub fn read_phase_stamps(&self) -> Result<Vec<(String, Vec<u64>)>> {
        let mut out = Vec::new();
        for (key, module) in self.probe_stamp_arrays() {
            let stamps = module
                .get_global(probe::STAMPS_SYMBOL, &self.stream)
                .map_err(|e| probe_err(&key, e))?;
            let bytes: Vec<u8> = self
                .stream
                .clone_dtoh(&stamps)
                .map_err(|e| probe_err(&key, e))?;
            let words: Vec<u64> = bytes
                .chunks_exact(8)
                .map(|b| u64::from_le_bytes(b.try_into().expect("8-byte chunk")))
                .collect();
            if words.iter().any(|&w| w != 0) {
                out.push((key, words));
            }
        }
        Ok(out)
    }

    /// The disk cache key of `source` built with `options`.
    fn build_key(&self, source: &KernelSource, options: &[String]) -> Result<String> {
        Ok(cache_key(&CacheKeyInputs {
            source_name: source.name,
            source_code: source.code,
            headers: sources::HEADERS,
            options,
            arch: &self.facts.arch,
            nvrtc_version: nvrtc::nvrtc_version()?,
            driver_version: self.facts.driver_version,
        }))
    }

    /// Compile, `threads` at a time, every build in `builds` that is neither
    /// loaded nor in the disk cache, and load it, so the arms' later
    /// [`Gpu::module`] calls find it in memory. Returns how many it compiled.
    /// A build that fails to compile is left to `module`, which reports the
    /// error where the arm needs it. Phase-probe runs build their own
    /// variants and skip this.
    pub fn prebuild(&self, builds: &[KernelBuild], threads: usize) -> Result<usize> {
        if self.phase_probe.load(Ordering::Relaxed) {
            return Ok(0);
        }
        let lock_err = || GvrError::Other(anyhow::anyhow!("module memo lock poisoned"));
        let mut keys = std::collections::HashSet::new();
        let mut missing = Vec::new(); // (build, key)
        let mut jobs = Vec::new();
        {
            let memo = self.modules.lock().map_err(|_| lock_err())?;
            for build in builds {
                let options = nvrtc::compile_options(&self.facts.arch, &build.defines);
                let key = self.build_key(&build.source, &options)?;
                let cached = memo.contains_key(&key) || self.disk_cache.contains(&key);
                if !cached && keys.insert(key.clone()) {
                    jobs.push((build.source, options));
                    missing.push((build, key));
                }
            }
        }
        let started = Instant::now();
        let results = nvrtc::compile_all(&jobs, threads);
        let elapsed = started.elapsed();
        let mut memo = self.modules.lock().map_err(|_| lock_err())?;
        let mut compiled = 0;
        for ((build, key), result) in missing.into_iter().zip(results) {
            match result {
                Ok(c) => {
                    self.install_compiled(
                        &build.source,
                        &build.defines,
                        key,
                        c,
                        elapsed,
                        &mut memo,
                    )?;
                    compiled += 1;
                }
                Err(e) => tracing::warn!(
                    "prebuild of {} {:?} failed: {e}",
                    build.source.name,
                    build.defines
                ),
            }
        }
        Ok(compiled)
    }

    fn module_built(
        &self,
        source: &KernelSource,
        defines: &[(&str, String)],
    ) -> Result<Arc<CudaModule>> {
        let options = nvrtc::compile_options(&self.facts.arch, defines);
        let key = self.build_key(source, &options)?;
        let mut memo = self
            .modules
            .lock()
            .map_err(|_| GvrError::Other(anyhow::anyhow!("module memo lock poisoned")))?;
        if let Some(module) = memo.get(&key) {
            self.memo_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(module.clone());
        }
        if let Some(cubin) = self.disk_cache.get(&key) {
            match self.ctx.load_module(cudarc::nvrtc::Ptx::from_binary(cubin)) {
                Ok(module) => {
                    tracing::info!(
                        "kernel {} {:?}: cache hit ({})",
                        source.name,
                        defines,
                        &key[..12]
                    );
                    self.disk_hits.fetch_add(1, Ordering::Relaxed);
                    memo.insert(key, module.clone());
                    return Ok(module);
                }
                // A corrupt or foreign cache file only costs a recompile.
                Err(e) => tracing::warn!("kernel cache entry {key} unusable ({e:?}); recompiling"),
            }
        }
        let started = Instant::now();
        let compiled = nvrtc::compile_cubin(source, &options)?;
        let elapsed = started.elapsed();
        self.compile_ns
            .fetch_add(elapsed.as_nanos() as u64, Ordering::Relaxed);
        self.install_compiled(source, defines, key, compiled, elapsed, &mut memo)
    }

    /// Report a fresh NVRTC build (warnings, hot-entry spills), count it,
    /// write it to the disk cache, load it and keep it in the memo.
    fn install_compiled(
        &self,
        source: &KernelSource,
        defines: &[(&str, String)],
        key: String,
        compiled: nvrtc::Compiled,
        elapsed: std::time::Duration,
        memo: &mut HashMap<String, Arc<CudaModule>>,
    ) -> Result<Arc<CudaModule>> {
        for line in compiled.log.lines().filter(|l| l.contains("warning")) {
            tracing::warn!("kernel {}: {line}", source.name);
        }
        for entry in nvrtc::parse_ptxas_log(&compiled.log) {
            if sources::is_hot_entry(&entry.name)
                && (entry.spill_stores > 0 || entry.spill_loads > 0)
            {
                tracing::warn!(
                    "kernel {} {:?}: entry {} spills ({} B stores, {} B loads)",
                    source.name,
                    defines,
                    entry.name,
                    entry.spill_stores,
                    entry.spill_loads
                );
            }
            tracing::debug!(
                "  {}: {} registers, {} B spill stores, {} B spill loads, {} B smem",
                entry.name,
                entry.registers,
                entry.spill_stores,
                entry.spill_loads,
                entry.smem
            );
        }
        tracing::info!(
            "kernel {} {:?}: compiled in {:.2} s ({})",
            source.name,
            defines,
            elapsed.as_secs_f64(),
            &key[..12]
        );
        self.compiled.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = self.disk_cache.put(&key, &compiled.cubin) {
            tracing::warn!("kernel cache not written: {e}");
        }
        let module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
            .map_err(|e| GvrError::Kernel {
                name: source.name.to_string(),
                message: format!("cuModuleLoadData: {e:?}"),
            })?;
        memo.insert(key, module.clone());
        Ok(module)
    }

    /// The entry point `name` of a loaded module.
    pub fn function(&self, module: &Arc<CudaModule>, name: &str) -> Result<CudaFunction> {
        if name.contains('\0') {
            return Err(GvrError::Kernel {
                name: name.replace('\0', "\\0"),
                message: "entry point name contains a NUL byte".into(),
            });
        }
        module.load_function(name).map_err(|e| GvrError::Kernel {
            name: name.to_string(),
            message: format!("entry point not found in module: {e:?}"),
        })
    }

    /// Let `f` launch with `bytes` of dynamic shared memory (above the 48 KiB
    /// default a kernel must opt in). The cap is raised to everything the
    /// device allows next to the function's static shared memory, never to
    /// `bytes` itself: functions are shared by every arm that loads the same
    /// module, and a cap set to one arm's smaller need would make another
    /// arm's larger launch fail (CUDA_ERROR_INVALID_VALUE). The cap does not
    /// change occupancy; the launch's own size does.
    pub fn set_max_dynamic_smem(&self, f: &CudaFunction, bytes: usize) -> Result<()> {
        let err = |message: String| GvrError::Kernel {
            name: "set_max_dynamic_smem".into(),
            message,
        };
        let static_bytes = f
            .get_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
            .map_err(|e| err(format!("cuFuncGetAttribute(static shared size): {e:?}")))?
            .max(0) as u64;
        let cap = self.facts.smem_per_block_optin.saturating_sub(static_bytes);
        if bytes as u64 > cap {
            return Err(err(format!(
                "{bytes} B of dynamic shared memory requested; the device allows {cap} B next to the kernel's {static_bytes} B static"
            )));
        }
        f.set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            cap as i32,
        )
        .map_err(|e| err(format!("cuFuncSetAttribute({cap} B): {e:?}")))
    }

    /// Module build counters since `open`.
    pub fn compile_stats(&self) -> CompileStats {
        CompileStats {
            compiled: self.compiled.load(Ordering::Relaxed),
            disk_hits: self.disk_hits.load(Ordering::Relaxed),
            memo_hits: self.memo_hits.load(Ordering::Relaxed),
        }
    }

    /// Wall time spent compiling with NVRTC since `open`.
    pub fn compile_time(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.compile_ns.load(Ordering::Relaxed))
    }

    fn shared_slot(&self) -> std::sync::MutexGuard<'_, Option<Arc<batch::StagedInputs>>> {
        // The slot holds a plain Arc: a panic elsewhere cannot corrupt it.
        self.shared_inputs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Register (or clear) the shared inputs; see `StagedInputs::share`.
    pub(crate) fn set_shared_inputs(&self, staged: Option<Arc<batch::StagedInputs>>) {
        *self.shared_slot() = staged;
    }

    /// Clear the shared inputs if they are still those of `identity`.
    pub(crate) fn clear_shared_inputs(&self, identity: batch::BatchIdentity) {
        let mut slot = self.shared_slot();
        if slot.as_ref().is_some_and(|s| s.identity() == identity) {
            *slot = None;
        }
    }

    /// The shared device inputs of exactly this host batch, if registered.
    pub(crate) fn shared_inputs_for(
        &self,
        batch: &crate::grid::Batch,
    ) -> Option<Arc<batch::StagedInputs>> {
        let identity = batch::BatchIdentity::of(batch);
        self.shared_slot()
            .as_ref()
            .filter(|s| s.identity() == identity)
            .cloned()
    }

    /// Where compiled CUBINs are cached.
    pub fn cache_dir(&self) -> &std::path::Path {
        self.disk_cache.dir()
    }

    /// Wait for everything enqueued on the stream.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(driver_err("stream synchronize"))
    }

    /// A device copy of `data` (enqueued on `stream`; the host slice may be
    /// dropped as soon as this returns).
    pub fn upload<T: cudarc::driver::DeviceRepr>(&self, data: &[T]) -> Result<CudaSlice<T>> {
        self.stream.clone_htod(data).map_err(driver_err("upload"))
    }

    /// A zero-filled device buffer of `len` elements (allocation is outside
    /// any timed window; the memset is enqueued on `stream`).
    pub fn zeroed<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<CudaSlice<T>> {
        self.stream
            .alloc_zeros::<T>(len.max(1))
            .map_err(driver_err("cuMemAlloc"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prebuild_uses_at_least_one_thread() {
        assert!(prebuild_threads() >= 1);
    }

    #[test]
    fn open_never_panics_and_errs_without_a_device() {
        // On the GPU-less build machine this must be an Err; on a GPU host an
        // out-of-range ordinal must be an Err. Either way: no panic.
        let result = std::panic::catch_unwind(|| Gpu::open(4096));
        let opened = result.expect("Gpu::open panicked");
        match opened {
            Err(GvrError::Gpu(reason)) => assert!(!reason.is_empty()),
            other => panic!("expected GvrError::Gpu, got {other:?}"),
        }
    }

    #[test]
    fn uuid_formats_like_nvidia_smi() {
        let bytes: [std::ffi::c_char; 16] = [
            0x12, 0x34, 0x56, 0x78, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e, 0x6f, 0x70, 0x01, 0x02, 0x03,
            0x04, 0x05,
        ];
        assert_eq!(
            uuid_text(&bytes),
            "GPU-12345678-1a2b-3c4d-5e6f-700102030405"
        );
    }
}
