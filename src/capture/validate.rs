//! `gvr-bench capture validate DIR`: the calibration gates of METHOD.md §8.4.
