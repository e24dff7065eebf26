//! `gvr-bench capture synth`: realistic synthetic decode captures.
