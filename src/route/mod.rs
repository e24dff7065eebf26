//! Pure dispatch for the self-sampling families and the shared
//! ladder/parameter math (used by the GPU host side and by `cpu-ss`).
