//! The environment manifest recorded with every run.
