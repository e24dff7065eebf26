//! GPU runtime: context, NVRTC build with a disk cache, buffers, launches.
