//! The kernel families of the self-sampling top-K, one file each, behind one
//! trait: [`FamilyLaunch`] is what a planned launch of any family offers the
//! plan (its variant, its builds, its launch shape) and the runner (load,
//! launch).

pub mod clus;
pub mod main;
pub mod reg;
pub mod reg_clus;

use cudarc::driver::LaunchConfig;

use crate::error::Result;
use crate::gpu::sources::Defines;
use crate::gpu::{DeviceBatch, KernelBuild, Workspace};

use super::launcher::Launcher;
use super::tuning::{Scope, Tuning};

/// The build define a clustered launch takes from its cluster size: `name=1`
/// for clusters of at least `from` CTAs, nothing below (the kernel's own
/// default, 0). A build-time choice, so each launch's module has one form;
/// a knob of the same name replaces it (`Tuning::over`).
pub(crate) fn cluster_size_define(cluster: u32, from: u32, name: &'static str) -> Defines {
    if cluster >= from {
        vec![(name, "1".to_string())]
    } else {
        Defines::new()
    }
}

/// One planned launch of a family.
pub trait FamilyLaunch {
    /// Recorded variant of the family's launch (`main/blk512/r1`, ...).
    fn variant(&self) -> String;

    /// The knob scopes that act on this family's launches.
    fn scopes(&self) -> &'static [Scope];

    /// Every build staging may load, the one it loads first first.
    fn builds(&self, tuning: &Tuning) -> Vec<KernelBuild>;

    /// The entry point launched.
    fn entry(&self) -> String;

    fn config(&self) -> LaunchConfig;

    /// Bytes of zeroed workspace the launch needs (0: none).
    fn workspace_bytes(&self) -> usize {
        0
    }

    /// Load the launch's build and settle what depends on the loaded
    /// function (outside any timed window).
    fn prepare(&mut self, launcher: &mut Launcher, tuning: &Tuning) -> Result<()> {
        let build = self.builds(tuning).swap_remove(0);
        let config = self.config();
        launcher.load(&build, &self.entry(), config.shared_mem_bytes)
    }

    /// Enqueue the launch over `batch`; no synchronisation.
    fn launch(
        &self,
        launcher: &Launcher,
        batch: &mut DeviceBatch,
        workspace: &mut Workspace,
    ) -> Result<()>;
}
