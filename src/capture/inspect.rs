//! `gvr-bench capture inspect DIR`: a summary of a capture set.
