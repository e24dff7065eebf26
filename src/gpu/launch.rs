//! Launch helpers that cudarc's builder does not cover: thread-block
//! cluster launches (`cuLaunchKernelEx` with a cluster-dimension attribute).
//!
//! Kernels whose cluster shape is fixed at compile time can instead declare
//! `__cluster_dims__(X, 1, 1)` and use the ordinary `launch_builder`; this
//! helper is for cluster sizes chosen at run time (e.g. by a route).

use std::ffi::c_void;

use cudarc::driver::sys::{
    CUfunction_attribute, CUlaunchAttribute, CUlaunchAttributeID, CUlaunchAttributeValue,
    CUlaunchConfig, CUresult,
};
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, DeviceRepr, LaunchConfig};

use super::Gpu;
use crate::error::{GvrError, Result};

/// Largest portable cluster size; Hopper allows up to 16 when the kernel
/// opts in to non-portable sizes.
pub const PORTABLE_CLUSTER_LIMIT: u32 = 8;
pub const MAX_CLUSTER_SIZE: u32 = 16;

/// Owned kernel arguments for a raw launch: each value is copied into its
/// own 8-byte-aligned slot so the pointer array stays valid for the call.
#[derive(Debug, Default)]
pub struct KernelArgs {
    slots: Vec<Box<[u64]>>,
}

impl KernelArgs {
    pub fn new() -> KernelArgs {
        KernelArgs::default()
    }

    /// A by-value argument (`int`, `unsigned long long`, `float`, a POD struct).
    pub fn value<T: DeviceRepr + Copy>(&mut self, value: T) -> &mut Self {
        let words = std::mem::size_of::<T>().div_ceil(8).max(1);
        let mut slot = vec![0u64; words].into_boxed_slice();
        // SAFETY: the slot holds at least size_of::<T>() bytes and is 8-byte
        // aligned, enough for any kernel parameter type.
        unsafe { std::ptr::write_unaligned(slot.as_mut_ptr() as *mut T, value) };
        self.slots.push(slot);
        self
    }

    /// A device buffer, passed as its pointer.
    pub fn buffer<T>(&mut self, gpu: &Gpu, slice: &CudaSlice<T>) -> &mut Self {
        let (pointer, _sync) = slice.device_ptr(&gpu.stream);
        self.value(pointer)
    }

    /// A null device pointer: an optional buffer that is absent.
    pub fn null(&mut self) -> &mut Self {
        self.value(0u64)
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    fn pointers(&mut self) -> Vec<*mut c_void> {
        self.slots
            .iter_mut()
            .map(|s| s.as_mut_ptr() as *mut c_void)
            .collect()
    }
}

/// Check that a cluster shape fits the grid and the hardware.
pub fn validate_cluster(
    config: &LaunchConfig,
    cluster: (u32, u32, u32),
) -> std::result::Result<(), String> {
    let (x, y, z) = cluster;
    if x == 0 || y == 0 || z == 0 {
        return Err(format!("cluster {cluster:?} has a zero dimension"));
    }
    let size = x * y * z;
    if size > MAX_CLUSTER_SIZE {
        return Err(format!(
            "cluster of {size} blocks exceeds the hardware limit {MAX_CLUSTER_SIZE}"
        ));
    }
    let (gx, gy, gz) = config.grid_dim;
    if !gx.is_multiple_of(x) || !gy.is_multiple_of(y) || !gz.is_multiple_of(z) {
        return Err(format!(
            "grid {:?} is not a multiple of cluster {cluster:?}",
            config.grid_dim
        ));
    }
    Ok(())
}

impl Gpu {
    /// Launch `function` on `self.stream` with thread-block clusters of
    /// `cluster` blocks. Cluster sizes above 8 opt the function in to
    /// non-portable sizes first.
    ///
    /// # Safety
    /// `args` must match the kernel's parameter list exactly (count, order,
    /// types), and every buffer must be large enough for what the kernel
    /// accesses — as with any CUDA launch.
    pub unsafe fn launch_cluster(
        &self,
        function: &CudaFunction,
        config: LaunchConfig,
        cluster: (u32, u32, u32),
        args: &mut KernelArgs,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.launch_ex(function, config, Some(cluster), args) }
    }

    /// Launch `function` on `self.stream` with owned [`KernelArgs`] and no
    /// cluster (for launchers that hold raw pointers, e.g. a null hint array).
    ///
    /// # Safety
    /// As for [`Gpu::launch_cluster`].
    pub unsafe fn launch_raw(
        &self,
        function: &CudaFunction,
        config: LaunchConfig,
        args: &mut KernelArgs,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.launch_ex(function, config, None, args) }
    }

    /// `cuLaunchKernelEx` with an optional cluster-dimension attribute.
    unsafe fn launch_ex(
        &self,
        function: &CudaFunction,
        config: LaunchConfig,
        cluster: Option<(u32, u32, u32)>,
        args: &mut KernelArgs,
    ) -> Result<()> {
        let kernel_err = |message: String| GvrError::Kernel {
            name: if cluster.is_some() {
                "launch_cluster"
            } else {
                "launch_raw"
            }
            .into(),
            message,
        };
        // SAFETY: an all-zero union is a valid value for every member.
        let mut value: CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
        if let Some(cluster) = cluster {
            validate_cluster(&config, cluster).map_err(kernel_err)?;
            if cluster.0 * cluster.1 * cluster.2 > PORTABLE_CLUSTER_LIMIT {
                function
                    .set_attribute(
                        CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                        1,
                    )
                    .map_err(|e| {
                        kernel_err(format!("allowing non-portable cluster sizes: {e:?}"))
                    })?;
            }
            value.clusterDim.x = cluster.0;
            value.clusterDim.y = cluster.1;
            value.clusterDim.z = cluster.2;
        }
        let mut attribute = CUlaunchAttribute {
            id: CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
            pad: [0; 4],
            value,
        };
        let launch_config = CUlaunchConfig {
            gridDimX: config.grid_dim.0,
            gridDimY: config.grid_dim.1,
            gridDimZ: config.grid_dim.2,
            blockDimX: config.block_dim.0,
            blockDimY: config.block_dim.1,
            blockDimZ: config.block_dim.2,
            sharedMemBytes: config.shared_mem_bytes,
            hStream: self.stream.cu_stream(),
            attrs: &mut attribute,
            numAttrs: u32::from(cluster.is_some()),
        };
        let mut pointers = args.pointers();
        // SAFETY: config, attribute and argument storage outlive the call;
        // the caller guarantees the argument list matches the kernel.
        let status = unsafe {
            cudarc::driver::sys::cuLaunchKernelEx(
                &launch_config,
                function.cu_function(),
                pointers.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        if status != CUresult::CUDA_SUCCESS {
            return Err(kernel_err(format!(
                "cuLaunchKernelEx (cluster {cluster:?}): {status:?}"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(grid: u32) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    #[test]
    fn cluster_shapes_are_checked() {
        assert!(validate_cluster(&config(16), (4, 1, 1)).is_ok());
        assert!(validate_cluster(&config(16), (16, 1, 1)).is_ok());
        assert!(validate_cluster(&config(18), (4, 1, 1)).is_err());
        assert!(validate_cluster(&config(32), (32, 1, 1)).is_err());
        assert!(validate_cluster(&config(16), (0, 1, 1)).is_err());
    }

    #[test]
    fn kernel_args_keep_each_value_in_its_own_slot() {
        let mut args = KernelArgs::new();
        args.value(7i32)
            .value(0x1234_5678_9abc_def0u64)
            .value(2.5f32);
        assert_eq!(args.len(), 3);
        let pointers = args.pointers();
        // SAFETY: the slots were written with exactly these types above.
        unsafe {
            assert_eq!(*(pointers[0] as *const i32), 7);
            assert_eq!(*(pointers[1] as *const u64), 0x1234_5678_9abc_def0);
            assert_eq!(*(pointers[2] as *const f32), 2.5);
        }
    }
}
