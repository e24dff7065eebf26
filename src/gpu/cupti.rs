//! CUPTI activity collection: GPU-side start/end timestamps of every kernel
//! (and memset) the process runs, the same quantity nsys reports.
//!
//! CUPTI's activity API is process-global (one pair of buffer callbacks), so
//! the collector is a process-wide singleton: records land in one list and
//! each timer takes out only those of its own context.

use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, OnceLock};

use cudarc::cupti::sys;

use crate::error::{GvrError, Result};

/// One kernel or memset execution as CUPTI saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivitySpan {
    /// Kernel name, or `[memset]`.
    pub name: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub device_id: u32,
    pub context_id: u32,
    pub correlation_id: u32,
}

impl ActivitySpan {
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// Leading fields shared by every `CUpti_ActivityKernelN` version (4 up to
/// 13: later versions only append fields), so one layout reads them all
/// regardless of which version this CUPTI emits.
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(dead_code)] // every field is needed for the layout, not all are read
struct KernelRecordPrefix {
    kind: u32,
    cache_config: u8,
    shared_memory_config: u8,
    registers_per_thread: u16,
    partitioned_cache_requested: u32,
    partitioned_cache_executed: u32,
    start: u64,
    end: u64,
    completed: u64,
    device_id: u32,
    context_id: u32,
    stream_id: u32,
    grid: [i32; 3],
    block: [i32; 3],
    static_shared_memory: i32,
    dynamic_shared_memory: i32,
    local_memory_per_thread: u32,
    local_memory_total: u32,
    correlation_id: u32,
    grid_id: i64,
    name: *const c_char,
}

/// Leading fields of `CUpti_ActivityMemset4` (and later).
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(dead_code)] // every field is needed for the layout, not all are read
struct MemsetRecordPrefix {
    kind: u32,
    value: u32,
    bytes: u64,
    start: u64,
    end: u64,
    device_id: u32,
    context_id: u32,
    stream_id: u32,
    correlation_id: u32,
}

const KIND_MEMSET: u32 = 2;
const KIND_KERNEL: u32 = 3;
const KIND_CONCURRENT_KERNEL: u32 = 10;
/// `CUPTI_ACTIVITY_FLAG_FLUSH_FORCED`: also flush buffers that are not full.
const FLUSH_FORCED: u32 = 1;
/// Size of each activity buffer handed to CUPTI (its recommended range).
const BUFFER_BYTES: usize = 8 << 20;
/// CUPTI requires activity buffers aligned to 8 bytes.
const BUFFER_ALIGN: usize = 8;

/// Most spans kept between two `take_spans` calls.
const MAX_PENDING_SPANS: usize = 1 << 20;

static SPANS: Mutex<Vec<ActivitySpan>> = Mutex::new(Vec::new());
static INIT: OnceLock<std::result::Result<(), String>> = OnceLock::new();

fn spans() -> std::sync::MutexGuard<'static, Vec<ActivitySpan>> {
    // A panic while holding the lock cannot leave the Vec inconsistent.
    SPANS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn buffer_layout() -> std::alloc::Layout {
    // BUFFER_BYTES and BUFFER_ALIGN are valid constants.
    std::alloc::Layout::from_size_align(BUFFER_BYTES, BUFFER_ALIGN)
        .unwrap_or(std::alloc::Layout::new::<u64>())
}

unsafe extern "C" fn buffer_requested(
    buffer: *mut *mut u8,
    size: *mut usize,
    max_records: *mut usize,
) {
    // SAFETY: CUPTI passes valid out-pointers; the layout is non-zero sized.
    unsafe {
        let memory = std::alloc::alloc(buffer_layout());
        *buffer = memory;
        *size = if memory.is_null() { 0 } else { BUFFER_BYTES };
        *max_records = 0;
    }
}

unsafe extern "C" fn buffer_completed(
    _context: cudarc::driver::sys::CUcontext,
    _stream_id: u32,
    buffer: *mut u8,
    _size: usize,
    valid_size: usize,
) {
    if buffer.is_null() {
        return;
    }
    // Never unwind into CUPTI's C frames.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let mut collected = Vec::new();
        let mut record: *mut sys::CUpti_Activity = std::ptr::null_mut();
        loop {
            // SAFETY: `buffer` is the buffer CUPTI filled with `valid_size` bytes.
            let status =
                unsafe { sys::cuptiActivityGetNextRecord(buffer, valid_size, &mut record) };
            if status != sys::CUptiResult::CUPTI_SUCCESS || record.is_null() {
                break;
            }
            // SAFETY: every record starts with a u32 kind; the prefixes below
            // are read only for the kinds whose layout they describe.
            unsafe {
                let kind = std::ptr::read_unaligned(record as *const u32);
                if kind == KIND_CONCURRENT_KERNEL || kind == KIND_KERNEL {
                    let r = std::ptr::read_unaligned(record as *const KernelRecordPrefix);
                    let name = if r.name.is_null() {
                        String::from("<unnamed>")
                    } else {
                        CStr::from_ptr(r.name).to_string_lossy().into_owned()
                    };
                    collected.push(ActivitySpan {
                        name,
                        start_ns: r.start,
                        end_ns: r.end,
                        device_id: r.device_id,
                        context_id: r.context_id,
                        correlation_id: r.correlation_id,
                    });
                } else if kind == KIND_MEMSET {
                    let r = std::ptr::read_unaligned(record as *const MemsetRecordPrefix);
                    collected.push(ActivitySpan {
                        name: "[memset]".into(),
                        start_ns: r.start,
                        end_ns: r.end,
                        device_id: r.device_id,
                        context_id: r.context_id,
                        correlation_id: r.correlation_id,
                    });
                }
            }
        }
        let mut all = spans();
        all.extend(collected);
        // Nobody drains spans while no timer runs (e.g. during certify):
        // keep memory bounded by dropping the oldest half.
        if all.len() > MAX_PENDING_SPANS {
            let excess = all.len() - MAX_PENDING_SPANS / 2;
            all.drain(..excess);
        }
    }));
    // SAFETY: allocated in `buffer_requested` with the same layout.
    unsafe { std::alloc::dealloc(buffer, buffer_layout()) };
}

fn cupti_call(status: sys::CUptiResult, call: &str) -> std::result::Result<(), String> {
    if status == sys::CUptiResult::CUPTI_SUCCESS {
        Ok(())
    } else {
        Err(format!("{call}: {status:?}"))
    }
}

fn initialise() -> std::result::Result<(), String> {
    // SAFETY: only tries to dlopen candidate library names.
    if !unsafe { sys::is_culib_present() } {
        return Err(
            "libcupti not found (add /usr/local/cuda/extras/CUPTI/lib64 to LD_LIBRARY_PATH)".into(),
        );
    }
    let outcome = catch_unwind(|| -> std::result::Result<(), String> {
        // SAFETY: plain CUPTI calls with valid function pointers.
        unsafe {
            cupti_call(
                sys::cuptiActivityRegisterCallbacks(Some(buffer_requested), Some(buffer_completed)),
                "cuptiActivityRegisterCallbacks",
            )?;
            cupti_call(
                sys::cuptiActivityEnable(
                    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                ),
                "cuptiActivityEnable(CONCURRENT_KERNEL)",
            )?;
            cupti_call(
                sys::cuptiActivityEnable(sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMSET),
                "cuptiActivityEnable(MEMSET)",
            )?;
        }
        Ok(())
    });
    match outcome {
        Ok(result) => result,
        Err(_) => Err("CUPTI loader panicked (missing symbol: CUPTI older than CUDA 13?)".into()),
    }
}

/// Enable kernel activity collection for the process (idempotent). The
/// first outcome is remembered: a failed initialisation is not retried.
pub fn enable() -> Result<()> {
    INIT.get_or_init(initialise).clone().map_err(GvrError::Gpu)
}

/// CUPTI's id of a driver context (matches `ActivitySpan::context_id`).
pub fn context_id(ctx: &cudarc::driver::CudaContext) -> Result<u32> {
    enable()?;
    let mut id = 0u32;
    // SAFETY: a live context handle and a valid out-pointer.
    let status = unsafe { sys::cuptiGetContextId(ctx.cu_ctx(), &mut id) };
    cupti_call(status, "cuptiGetContextId").map_err(GvrError::Gpu)?;
    Ok(id)
}

/// Deliver all pending records (the caller has synchronised the stream),
/// then take out the spans of `context_id`, leaving other contexts' spans.
pub fn take_spans(context_id: u32) -> Result<Vec<ActivitySpan>> {
    enable()?;
    // SAFETY: plain CUPTI call; buffers complete through our callback.
    let status = unsafe { sys::cuptiActivityFlushAll(FLUSH_FORCED) };
    cupti_call(status, "cuptiActivityFlushAll").map_err(GvrError::Gpu)?;
    let mut all = spans();
    let (mine, others): (Vec<_>, Vec<_>) = all.drain(..).partition(|s| s.context_id == context_id);
    *all = others;
    Ok(mine)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_offsets_match_cupti_headers() {
        // Offsets of CUpti_ActivityKernel4..13 (cupti_activity.h).
        assert_eq!(std::mem::offset_of!(KernelRecordPrefix, start), 16);
        assert_eq!(std::mem::offset_of!(KernelRecordPrefix, end), 24);
        assert_eq!(std::mem::offset_of!(KernelRecordPrefix, device_id), 40);
        assert_eq!(std::mem::offset_of!(KernelRecordPrefix, context_id), 44);
        assert_eq!(std::mem::offset_of!(KernelRecordPrefix, correlation_id), 92);
        assert_eq!(std::mem::offset_of!(KernelRecordPrefix, name), 104);
        assert_eq!(std::mem::offset_of!(MemsetRecordPrefix, start), 16);
        assert_eq!(std::mem::offset_of!(MemsetRecordPrefix, context_id), 36);
        // And against cudarc's own binding of the newest kernel record.
        assert_eq!(
            std::mem::offset_of!(KernelRecordPrefix, name),
            std::mem::offset_of!(sys::CUpti_ActivityKernel4, name)
        );
        assert_eq!(
            std::mem::offset_of!(MemsetRecordPrefix, correlation_id),
            std::mem::offset_of!(sys::CUpti_ActivityMemset4, correlationId)
        );
    }

    #[test]
    fn span_duration_never_underflows() {
        let span = ActivitySpan {
            name: "k".into(),
            start_ns: 10,
            end_ns: 5,
            device_id: 0,
            context_id: 0,
            correlation_id: 0,
        };
        assert_eq!(span.duration_ns(), 0);
    }
}
