//! The kernel families of the self-sampling top-K, one file each.

pub mod clus;
pub mod main;
pub mod reg;
pub mod reg_clus;
