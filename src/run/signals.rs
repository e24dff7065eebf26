//! SIGINT and SIGTERM end a run the same way: the loop stops after the
//! current case, every finished record stays, the resume command is printed
//! and the exit code says which signal it was (130 = 128 + SIGINT,
//! 143 = 128 + SIGTERM). A second signal ends the process at once.
//!
//! The handler only stores the signal number (async-signal-safe); the loop
//! polls it between cases.

use std::sync::atomic::{AtomicI32, Ordering};

/// The first stop signal received since `install` (0: none).
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    if STOP_SIGNAL
        .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        // Second signal: the user really wants out.
        unsafe { libc::_exit(128 + sig) };
    }
    let msg: &[u8] = if sig == libc::SIGTERM {
        b"\nSIGTERM: stopping after the current case (a second signal aborts now)\n"
    } else {
        b"\nstopping after the current case (Ctrl-C again to abort now)\n"
    };
    // write(2) is async-signal-safe; eprintln! is not.
    unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
}

/// Route SIGINT and SIGTERM to the stop flag and clear it. Installing twice
/// is harmless.
pub fn install() {
    STOP_SIGNAL.store(0, Ordering::SeqCst);
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only touches an atomic and calls write/_exit.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// The signal that asked the run to stop, if any.
pub fn requested() -> Option<i32> {
    match STOP_SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

/// The exit code for a run stopped by `sig`: 128 + the signal number.
pub fn exit_code(sig: i32) -> i32 {
    128 + sig
}

#[cfg(test)]
mod tests {
    #[test]
    fn exit_codes_follow_the_shell_convention() {
        assert_eq!(super::exit_code(libc::SIGINT), 130);
        assert_eq!(super::exit_code(libc::SIGTERM), 143);
    }
}
