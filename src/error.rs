//! One error type for everything the user can get wrong, with the exit code
//! the CLI returns for it. Internal invariants use `anyhow` and exit 3.

use std::path::PathBuf;

pub type Result<T, E = GvrError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum GvrError {
    /// Bad input: a capture, grid, option or run directory the user supplied.
    /// Always names the file and the field so the user can act on it.
    #[error("{path}: {field}: {message}")]
    Input {
        path: PathBuf,
        field: String,
        message: String,
    },
    /// A command-line value that is not acceptable (unknown arm, bad shard...).
    #[error("{0}")]
    Usage(String),
    /// The GPU runtime is needed but not usable (no driver, no device, NVRTC missing).
    #[error("GPU unavailable: {0}")]
    Gpu(String),
    /// A kernel failed to compile or launch.
    #[error("kernel {name}: {message}")]
    Kernel { name: String, message: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl GvrError {
    pub fn input(
        path: impl Into<PathBuf>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        GvrError::Input {
            path: path.into(),
            field: field.into(),
            message: message.into(),
        }
    }

    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        GvrError::Io {
            path: path.into(),
            source,
        }
    }

    /// Exit code contract: 2 = the user's input is wrong (fix it and rerun),
    /// 3 = environment or internal failure. (1 is reserved for "the check ran
    /// and found a problem": a regression or an inexact arm.)
    pub fn exit_code(&self) -> i32 {
        match self {
            GvrError::Input { .. } | GvrError::Usage(_) | GvrError::Io { .. } => 2,
            GvrError::Gpu(_) | GvrError::Kernel { .. } | GvrError::Other(_) => 3,
        }
    }
}
